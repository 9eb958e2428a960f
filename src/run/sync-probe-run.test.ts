import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runAtk } from '../__fixtures__/atk-process.js';
import { embeddedSglangCommand, embeddedVllmCommand } from '../__fixtures__/engine-processes.js';
import { startUrlStandIn, writeSmokeRecipe } from '../__fixtures__/smoke-recipe.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { SYNC_FAULT_ENV, type SyncFault } from '../engines/sync/index.js';

// `atk run` with a weight sync broken on purpose (ATK_SYNC_FAULT): the check after the sync must fail the
// step it happens in, before anything samples from the engine, whatever the engine kind and sync mode.
// Every run trains by sft (each step trains and syncs) on the shipped tiny-arith model; engines serve float32,
// so the float32 tolerance (1e-3) holds and the gaps the faults open (0.02-0.24) are far above it.
const tempDir = tempDirs('atk-planted-');

function engine(kind: 'vllm' | 'sglang', extra = ''): string {
  const command = kind === 'vllm' ? embeddedVllmCommand : embeddedSglangCommand;
  return `  engine: {kind: ${kind}, command: ${JSON.stringify(command)}, startup_timeout_s: 120, args: ['--dtype', 'float32']${extra}}`;
}

/** Runs the smoke quickstart as `name` with `engineLine` and `algorithm`, with `fault` planted; returns the run directory. */
async function plantedRun(
  name: string,
  engineLine: string | undefined,
  algorithm: string,
  fault: SyncFault | undefined,
): Promise<{ run: string; exitCode: number | undefined; stderr: string }> {
  const dir = tempDir();
  const recipe = writeSmokeRecipe(dir, name, {
    ...(engineLine ? { engine: engineLine } : {}),
    algorithm,
    lines: ['train: {steps: 2, eval_before: false, eval_after: false}'],
  });
  const env = { ...process.env, [SYNC_FAULT_ENV]: fault ?? '' } as Record<string, string>;
  const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], { cwd: dir, env });
  return { run: join(dir, 'runs', name, 'v001'), exitCode: result.exitCode, stderr: result.stderr };
}

/** The lines of a file or the entries of a directory, nothing when it does not exist. */
function written(path: string): string[] {
  if (!existsSync(path)) return [];
  return statSync(path).isDirectory() ? readdirSync(path) : readFileSync(path, 'utf8').split('\n').filter(Boolean);
}

function manifestStatus(run: string): string {
  return (JSON.parse(readFileSync(join(run, 'manifest.json'), 'utf8')) as { status: string }).status;
}

/** What a planted fault must leave: exit 1 naming the engine, policy 1 and the gap; the run failed; nothing of step 1 kept. */
function expectFailedFirstSync(
  result: { run: string; exitCode: number | undefined; stderr: string },
  engineName: string,
  adapter = '',
): number {
  const first = result.stderr.split('\n')[0] ?? '';
  expect([result.exitCode, first]).toStrictEqual([
    1,
    expect.stringMatching(
      new RegExp(
        `^weight sync check failed: the ${engineName} engine does not serve policy 1${adapter}: its logprobs of a 160-token probe are up to \\S+ away from the trainer's \\(tolerance 0\\.001, `,
      ),
    ),
  ]);
  expect(manifestStatus(result.run)).toBe('failed');
  // The step failed in its sync: no metrics line, trajectories or checkpoint of it (a disk sync's files aside).
  const kept = ['metrics.jsonl', 'trajectories', 'checkpoints'].map((f) => written(join(result.run, f)));
  expect(kept.map((entries) => entries.filter((e) => e !== 'sync'))).toStrictEqual([[], [], []]);
  return Number(/up to (\S+) away/.exec(first)![1]);
}

describe('atk run with a weight sync broken on purpose', () => {
  test.each([
    ['a vllm full reload that skips decoder layer 0', 'vllm', engine('vllm'), '{name: sft}', 'skip_layer', ''],
    [
      'a vllm broadcast that skips decoder layer 0',
      'vllm',
      engine('vllm', ', weight_sync: broadcast'),
      '{name: sft}',
      'skip_layer',
      '',
    ],
    ['a vllm full reload without a prefix-cache reset', 'vllm', engine('vllm'), '{name: sft}', 'keep_prefix_cache', ''],
    [
      'a vllm LoRA load that does nothing',
      'vllm',
      engine('vllm'),
      '{name: sft, lora: {rank: 8, alpha: 16}}',
      'lora_noop',
      ' \\(adapter policy@1\\)',
    ],
    ['an sglang reload that skips decoder layer 0', 'sglang', engine('sglang'), '{name: sft}', 'skip_layer', ''],
    [
      'an embedded engine that keeps its prefix cache across a train step',
      'embedded',
      undefined,
      '{name: sft}',
      'keep_prefix_cache',
      '',
    ],
  ] as const)(
    'returns exit 1 before any episode samples from %s',
    async (_what, name, engineLine, algorithm, fault, adapter) => {
      const result = await plantedRun(`planted-${fault}`, engineLine, algorithm, fault);
      expect(expectFailedFirstSync(result, name, adapter)).toBeGreaterThan(0.01);
    },
  );

  test('returns exit 1 for a url engine whose reload skips decoder layer 0, at the recipe tolerance', async () => {
    const served = await startUrlStandIn(tempDir(), ['--dtype', 'float32']);
    try {
      // A server atk did not start serves a dtype atk cannot see: the recipe says how close it must be.
      const url = `  engine: {kind: url, url: ${served.processes[0]!.baseUrl}, sync_probe_tolerance: 0.001}`;
      const result = await plantedRun('planted-url', url, '{name: sft}', 'skip_layer');
      expect(result.stderr.split('\n')[0]).toContain(
        "from the trainer's (tolerance 0.001, model.engine.sync_probe_tolerance)",
      );
      expectFailedFirstSync(result, 'url');
    } finally {
      await served.stop();
    }
  });

  test('returns a finished run with every step checked when nothing is broken', async () => {
    const result = await plantedRun('unplanted', engine('vllm'), '{name: sft}', undefined);
    expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    const steps = readFileSync(join(result.run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(steps.map((s) => [s.step, s['sync/probe_max_abs_logprob_diff']! < 1e-4])).toStrictEqual([
      [1, true],
      [2, true],
    ]);
    expect(existsSync(join(result.run, 'checkpoints', 'step-00002'))).toBe(true);
  });
});
