import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type ResultPromise } from 'execa';
import { describe, expect, test } from 'vitest';
import { runAtk } from '../__fixtures__/atk-process.js';
import { alive, embeddedVllmCommand, tsScript } from '../__fixtures__/engine-processes.js';
import { startUrlStandIn, writeSmokeRecipe } from '../__fixtures__/smoke-recipe.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { CHECKPOINT_MARKER } from '../runs/run-dir.js';
import { projectRoot } from '../util/paths.js';
import { PARTIAL_RESULTS } from './evaluate.js';

// A run whose engine dies (or hangs) part way: it must end within seconds with exit 1, status failed, the
// engine's log in the error and no checkpoint after the death, and `--resume` must finish it. The engine
// is the stand-in for `vllm serve` (the embedded engine behind vLLM's command line), or the trainer itself
// for the embedded engine; every step trains by sft and is checkpointed.
const tempDir = tempDirs('atk-dies-');

/** The smoke quickstart as `name`, six sft steps, each checkpointed, served by `engine` (a model.engine line), with `lines` added. */
function writeRecipe(name: string, engine: string, lines: readonly string[] = []): { dir: string; recipe: string } {
  const dir = tempDir();
  const train = 'train: {steps: 6, save_every: 1, eval_before: false, eval_after: false}';
  return { dir, recipe: writeSmokeRecipe(dir, name, { engine, algorithm: '{name: sft}', lines: [train, ...lines] }) };
}

const vllmStandIn = `  engine: {kind: vllm, command: ${JSON.stringify(embeddedVllmCommand)}, startup_timeout_s: 120}`;

/** `atk <args>` started, not awaited, with whether it has ended yet. */
function startAtk(args: readonly string[], cwd: string): { readonly result: ResultPromise; ended(): boolean } {
  const [file, ...cli] = tsScript('atk-cli.ts');
  const result = execa(file!, [...cli, ...args], { reject: false, cwd });
  let ended = false;
  void result.finally(() => void (ended = true));
  return { result, ended: () => ended };
}

/** Waits (up to 3 minutes) until `ready` returns a value, and returns it; fails at once if `atk` ends first. */
async function until<T>(ready: () => T | undefined, atk: ReturnType<typeof startAtk>): Promise<T> {
  for (let waited = 0; waited < 180_000; waited += 200) {
    const value = ready();
    if (value !== undefined) return value;
    if (atk.ended()) throw new Error(`atk ended first: ${String((await atk.result).stderr)}`);
    await sleep(200);
  }
  throw new Error('gave up waiting');
}

/**
 * Runs `atk <args>` until `run` records its first step, then stops `served` (a url engine: atk did not start
 * it and does not watch it); returns how atk ended.
 */
async function stopAfterFirstStep(
  served: { stop(): Promise<void> },
  args: readonly string[],
  cwd: string,
  run: string,
): Promise<Awaited<ResultPromise>> {
  const atk = startAtk(args, cwd);
  await until(() => (trainSteps(run).length >= 1 ? true : undefined), atk);
  await served.stop();
  return atk.result;
}

function read(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

function trainSteps(run: string): number[] {
  return read(join(run, 'metrics.jsonl'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { kind: string; step: number })
    .filter((l) => l.kind === 'train')
    .map((l) => l.step);
}

/** Steps with a committed checkpoint (its marker written). */
function committed(run: string): string[] {
  const dir = join(run, 'checkpoints');
  return existsSync(dir)
    ? readdirSync(dir).filter((d) => d !== 'sync' && existsSync(join(dir, d, CHECKPOINT_MARKER)))
    : [];
}

function manifest(run: string): { status: string; status_history: { status: string; message?: string }[] } {
  return JSON.parse(read(join(run, 'manifest.json'))) as ReturnType<typeof manifest>;
}

/** Where an engine or trainer log says its pid. */
function loggedPid(log: string, pattern: RegExp): number | undefined {
  const pid = pattern.exec(read(log))?.[1];
  return pid === undefined ? undefined : Number(pid);
}

describe('atk run whose engine dies part way', { timeout: 600_000 }, () => {
  test.each([
    [
      'a launched vllm engine',
      'vllm engine was killed during the run',
      vllmStandIn,
      'engine.log',
      /embedded-vllm-serve: pid (\d+)/,
    ],
    [
      'the embedded engine (its trainer)',
      'trainer (it serves the embedded engine) was killed during the run',
      '',
      'trainer.log',
      /atk_trainer pid (\d+) serving/,
    ],
  ] as const)(
    'returns exit 1 within seconds when %s is killed, and --resume finishes the run',
    async (_what, message, engineLine, log, pidLine) => {
      const { dir, recipe } = writeRecipe('dies', engineLine);
      const run = join(dir, 'runs', 'dies', 'v001');
      const atk = startAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], dir);
      await until(() => (trainSteps(run).length >= 2 ? true : undefined), atk);
      const pid = loggedPid(join(run, 'logs', log), pidLine)!;
      const stepsAtKill = trainSteps(run).length;
      const killedAt = performance.now();
      process.kill(pid, 'SIGKILL');
      const result = await atk.result;
      const seconds = (performance.now() - killedAt) / 1000;
      const stderr = String(result.stderr).split('\n');
      expect([result.exitCode, stderr[0], stderr[1]]).toStrictEqual([
        1,
        message,
        `  last lines of ${join(run, 'logs', log)}:`,
      ]);
      expect(seconds).toBeLessThan(20);
      const { status, status_history } = manifest(run);
      expect([status, status_history.at(-1)?.message]).toStrictEqual(['failed', message]);
      // Nothing trained after the death was recorded or checkpointed: at most the steps recorded before it.
      expect(committed(run).filter((c) => Number(c.slice('step-'.length)) > stepsAtKill)).toStrictEqual([]);
      expect(trainSteps(run).length).toBe(stepsAtKill);
      expect(alive(pid)).toBe(false);

      const resumed = await runAtk(['run', '--resume', run], { cwd: dir });
      expect([resumed.exitCode, resumed.stderr]).toStrictEqual([0, '']);
      expect([manifest(run).status, trainSteps(run).at(-1), committed(run).at(-1)]).toStrictEqual([
        'finished',
        6,
        'step-00006',
      ]);
    },
  );

  test('returns exit 1 when a launched engine stops answering its health checks, naming it', async () => {
    const { dir, recipe } = writeRecipe('hangs', vllmStandIn, [
      'cluster: {heartbeat_interval_s: 0.5, heartbeat_misses: 2}',
    ]);
    const run = join(dir, 'runs', 'hangs', 'v001');
    const atk = startAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], dir);
    await until(() => (trainSteps(run).length >= 1 ? true : undefined), atk);
    const pid = loggedPid(join(run, 'logs', 'engine.log'), /embedded-vllm-serve: pid (\d+)/)!;
    process.kill(pid, 'SIGSTOP'); // a hung engine: nothing exits, nothing refuses
    try {
      const result = await atk.result;
      expect([result.exitCode, String(result.stderr).split('\n')[0]]).toStrictEqual([
        1,
        'vllm engine on this machine answered none of 2 heartbeats (GET /health, 0.5 s apart) during the run',
      ]);
      expect(manifest(run).status).toBe('failed');
    } finally {
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  test('returns exit 1 from a run on a url engine that dies, at the step whose every episode failed in it', async () => {
    const served = await startUrlStandIn(tempDir());
    try {
      // atk did not start it, so atk does not watch it: the step that finds it gone fails the run.
      const { dir, recipe } = writeRecipe('url-dies', `  engine: {kind: url, url: ${served.processes[0]!.baseUrl}}`);
      const run = join(dir, 'runs', 'url-dies', 'v001');
      // Not sft: reference episodes never reach the engine. GRPO with every group kept trains each step.
      const args = ['run', recipe, 'algorithm.name=grpo', 'algorithm.drop_zero_variance_groups=false'];
      const result = await stopAfterFirstStep(served, [...args, `output.runs_dir=${join(dir, 'runs')}`], dir, run);
      expect([result.exitCode, String(result.stderr).split('\n')[0]]).toStrictEqual([
        1,
        expect.stringMatching(/^step 2: all 16 episodes failed in the engine; the first: vllm /),
      ]);
      expect([manifest(run).status, committed(run)]).toStrictEqual(['failed', ['step-00001']]);
    } finally {
      await served.stop();
    }
  });
});

describe('atk run of an external agent whose engine dies part way', { timeout: 600_000 }, () => {
  test('returns exit 1 at the step whose agents all failed on the gateway for want of the engine', async () => {
    const served = await startUrlStandIn(tempDir());
    try {
      const dir = tempDir();
      const run = join(dir, 'runs', 'external-agent', 'v001');
      const result = await stopAfterFirstStep(
        served,
        [
          'run',
          join(projectRoot(), 'recipes', 'external-agent.yaml'),
          'model.engine.kind=url',
          `model.engine.url=${served.processes[0]!.baseUrl}`,
          'algorithm.drop_zero_variance_groups=false',
          'train.steps=4',
          'train.tasks_per_step=2',
          'algorithm.group_size=4',
          'train.eval_before=false',
          'train.eval_after=false',
          `output.runs_dir=${join(dir, 'runs')}`,
        ],
        dir,
        run,
      );
      // Each agent got the gateway's 502 and gave up: its episode failed in the engine, not in the agent.
      expect([result.exitCode, String(result.stderr).split('\n')[0]]).toStrictEqual([
        1,
        expect.stringMatching(/^step 2: all 8 episodes failed in the engine; the first: vllm .*\(then the agent: /),
      ]);
      expect(manifest(run).status).toBe('failed');
    } finally {
      await served.stop();
    }
  });
});

describe('atk eval whose engine dies part way', { timeout: 600_000 }, () => {
  test('returns exit 1 with the engine log, and no summary of the episodes that failed in it', async () => {
    const { dir, recipe } = writeRecipe('eval-dies', vllmStandIn, ['dataset: {eval_limit: 40}']);
    const out = join(dir, 'runs');
    const atk = startAtk(['eval', recipe, '--no-tui', '--concurrency', '4', `output.runs_dir=${out}`], dir);
    const partial = await until(() => {
      if (!existsSync(out)) return undefined;
      const found = readdirSync(out, { recursive: true, encoding: 'utf8' }).find((f) => f.endsWith(PARTIAL_RESULTS));
      return found && read(join(out, found)).split('\n').length > 3 ? join(out, found) : undefined;
    }, atk);
    const evalDir = join(partial, '..');
    const engineLog = readdirSync(out, { recursive: true, encoding: 'utf8' }).find((f) => f.endsWith('engine.log'))!;
    const pid = loggedPid(join(out, engineLog), /embedded-vllm-serve: pid (\d+)/)!;
    process.kill(pid, 'SIGKILL');
    const result = await atk.result;
    expect([result.exitCode, String(result.stderr).split('\n')[0]]).toStrictEqual([
      1,
      'vllm engine was killed during the run',
    ]);
    expect(existsSync(join(evalDir, 'summary.json'))).toBe(false);
  });
});
