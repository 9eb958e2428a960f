import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, describe, expect, test } from 'vitest';
import { alive, doubleEngineCommand, tsScript } from '../../__fixtures__/engine-processes.js';
import { freePort } from '../../util/free-port.js';
import { createVllmClient } from '../vllm.js';
import { engineCommand } from './engine-command.js';
import {
  EngineStartError,
  launchEngineProcess,
  type EngineProcess,
  type EngineStartProgress,
} from './engine-process.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-engine-'));
const running: EngineProcess[] = [];
afterAll(() => Promise.all(running.map((e) => e.stop())));

async function launch(
  command: readonly string[],
  extra: { timeoutMs?: number; env?: Record<string, string>; log?: string; progress?: EngineStartProgress[] } = {},
): Promise<EngineProcess> {
  const port = await freePort();
  const built = engineCommand({
    kind: 'vllm',
    model: 'models/tiny',
    servedModelName: 'policy',
    port,
    command,
    args: ['--enforce-eager'],
    gpus: [2],
    gpuMemoryUtilization: 0.5,
    maxModelLen: 2048,
    lora: { rank: 8, targetModules: ['q_proj'] },
  });
  const engine = await launchEngineProcess({
    name: 'vllm',
    command: { ...built, env: { ...built.env, ...extra.env } },
    port,
    servedModelName: 'policy',
    logFile: join(dir, extra.log ?? 'engine.log'),
    startupTimeoutMs: extra.timeoutMs ?? 60_000,
    graceMs: 2000,
    onProgress: (p) => extra.progress?.push(p),
  });
  running.push(engine);
  return engine;
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  for (const end = performance.now() + withinMs; performance.now() < end; await sleep(50)) if (!alive(pid)) return true;
  return !alive(pid);
}

describe('launchEngineProcess', () => {
  test('returns a ready engine once /health and /v1/models answer, with its output in the log', async () => {
    const progress: EngineStartProgress[] = [];
    const engine = await launch(doubleEngineCommand, { env: { ATK_DOUBLE_DELAY_MS: '800' }, progress });
    const phases = [...new Set(progress.map((p) => p.phase))];
    expect(phases).toStrictEqual(['spawned', 'health', 'models', 'ready']);
    expect(progress.filter((p) => p.phase === 'health').length).toBeGreaterThan(2);
    const g = await createVllmClient({ baseUrl: engine.baseUrl, model: 'policy' }).generate([1, 2], {
      maxTokens: 4,
      temperature: 1,
      topP: 1,
      topK: -1,
      seed: 1,
    });
    expect(g.tokenIds).toHaveLength(4);
    const log = readFileSync(engine.logFile, 'utf8');
    expect(log).toContain('"model/tiny"'.replace('model/', 'models/'));
    expect(log).toContain('"--served-model-name","policy"');
    expect(log).toContain('"--logprobs-mode","processed_logprobs","--return-tokens-as-token-ids"');
    expect(log).toContain('"--enable-lora","--max-lora-rank","8"');
    expect(log).toContain('"--enforce-eager"]');
    expect(log).toContain('CUDA_VISIBLE_DEVICES=2 VLLM_ALLOW_RUNTIME_LORA_UPDATING=True');
    await engine.stop();
    expect(await engine.exited).toBe(0);
  });

  test('rejects an engine that exits during startup with its last log lines and the log path', async () => {
    const crash = [
      'sh',
      '-c',
      'echo "INFO loading weights"; echo "torch.OutOfMemoryError: CUDA out of memory" >&2; exit 3',
      'sh',
    ];
    const error = await launch(crash, { log: 'crash.log' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineStartError);
    const e = error as EngineStartError;
    expect(e.message.split('\n')[0]).toBe('vllm exited with code 3 during startup');
    expect([e.logPath, e.logTail]).toStrictEqual([
      join(dir, 'crash.log'),
      ['INFO loading weights', 'torch.OutOfMemoryError: CUDA out of memory'],
    ]);
    expect(e.message).toContain(`last lines of ${join(dir, 'crash.log')}`);
  });

  test('rejects an engine that never becomes healthy and kills it', async () => {
    const pidFile = join(dir, 'hang.pid');
    const hang = ['sh', '-c', `echo $$ > ${pidFile}; echo "still loading weights"; exec sleep 600`, 'sh'];
    const error = await launch(hang, { log: 'hang.log', timeoutMs: 1500 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineStartError);
    expect((error as Error).message).toMatch(
      /^vllm was not ready within 1\.5 s \(still waiting for GET \/health\)\n.*\n {4}still loading weights$/,
    );
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  test('rejects a command that does not exist', async () => {
    const error = await launch(['/nonexistent/vllm'], { log: 'missing.log' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineStartError);
    expect((error as Error).message).toMatch(/^vllm: could not start \/nonexistent\/vllm \(.*ENOENT.*\)/);
  });

  test('returns from stop only when the whole process group is gone', async () => {
    const forking = ['sh', '-c', 'sleep 300 & echo "grandchild $!"; exec "$@"', 'sh', ...doubleEngineCommand];
    const engine = await launch(forking, { log: 'fork.log' });
    const grandchild = Number(/grandchild (\d+)/.exec(readFileSync(engine.logFile, 'utf8'))?.[1]);
    expect([alive(engine.pid), alive(grandchild)]).toStrictEqual([true, true]);
    await engine.stop();
    expect([alive(engine.pid), alive(grandchild)]).toStrictEqual([false, false]);
  });

  test("returns exited as soon as the leader dies, while a process it started lives on, as vLLM's engine core does", async () => {
    const forking = ['sh', '-c', 'sleep 300 & echo "grandchild $!"; exec "$@"', 'sh', ...doubleEngineCommand];
    const engine = await launch(forking, { log: 'leader.log' });
    const grandchild = Number(/grandchild (\d+)/.exec(readFileSync(engine.logFile, 'utf8'))?.[1]);
    process.kill(engine.pid, 'SIGKILL');
    const seen = await Promise.race([engine.exited, sleep(5000).then(() => 'pending')]);
    expect([seen, alive(grandchild)]).toStrictEqual([null, true]);
    await engine.stop();
    expect(alive(grandchild)).toBe(false);
  });

  test('returns with the engine killed when its owner crashes or is SIGKILLed', async () => {
    for (const mode of ['throw', 'hang'] as const) {
      const [file, ...args] = tsScript('engine-owner-main.ts');
      const out = join(dir, `owner-${mode}.out`);
      const owner = execa(file, [...args, mode, join(dir, `owner-${mode}.log`)], {
        reject: false,
        stdout: { file: out },
        stderr: 'ignore',
      });
      let finished = false;
      void owner.then(() => (finished = true));
      let pid = 0;
      for (let seen = false; !pid && !seen; await sleep(100)) {
        seen = finished;
        pid = Number(/engine pid (\d+)/.exec(existsSync(out) ? readFileSync(out, 'utf8') : '')?.[1] ?? 0);
      }
      expect(pid).toBeGreaterThan(0);
      if (mode === 'hang') owner.kill('SIGKILL');
      await owner;
      // throw: the exit hook kills at once; SIGKILL: the watchdog notices within a second, then SIGTERM.
      expect({ mode, gone: await gone(pid, 8000) }).toStrictEqual({ mode, gone: true });
    }
  });
});
