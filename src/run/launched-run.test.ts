import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import {
  alive,
  doubleEngineCommand,
  embeddedSglangCommand,
  embeddedVllmCommand,
  processesRunning,
  tsScript,
} from '../__fixtures__/engine-processes.js';
import { runAtk } from '../__fixtures__/atk-process.js';
import {
  LAUNCHED_TEST_TIMEOUT_MS,
  launchedVllmYaml,
  REAL_VLLM,
  TRAINER_ON_VLLM_TORCH,
} from '../__fixtures__/launched-vllm.js';
import { writeModelWithWeights } from '../__fixtures__/tiny-qwen2.js';
import { projectRoot } from '../util/paths.js';

// `atk run` end to end on the launched-engine path: the smoke quickstart with kind vllm, launching the vLLM
// under test (src/__fixtures__/launched-vllm.ts: the embedded engine behind a `vllm serve` command line, or
// real vLLM under npm run test:vllm), and a LoRA trained by sft so every step trains and syncs
// policy@<step> into the engine.
/**
 * The smoke quickstart as recipe `name` with `lines` added (model.engine lines first), on the tiny-arith
 * architecture with random weights, or with `shipped` on the shipped tiny-arith model (which GRPO has signal on).
 */
async function writeRecipe(
  name: string,
  lines: readonly string[],
  shipped = false,
): Promise<{ dir: string; recipe: string }> {
  const dir = mkdtempSync(join(tmpdir(), `atk-${name}-`));
  const tinyArith = join(projectRoot(), 'models', 'tiny-arith');
  const model = shipped ? tinyArith : await writeModelWithWeights(join(dir, 'model'), tinyArith);
  const recipe = join(dir, `${name}.yaml`);
  const [engine, ...rest] = lines;
  writeFileSync(
    recipe,
    [
      `name: ${name}`,
      `extends: ${join(projectRoot(), 'recipes', 'smoke', 'quickstart.yaml')}`,
      'model:',
      `  path: ${model}`,
      engine,
      '  trainer: {device: cpu}',
      ...rest,
    ].join('\n'),
  );
  return { dir, recipe };
}

describe('atk run with a launched engine', () => {
  test(
    'returns a finished run whose steps synced the adapter into the engine, with the engine stopped',
    async () => {
      const { dir, recipe } = await writeRecipe('launched', [
        launchedVllmYaml(),
        'algorithm: {name: sft, lora: {rank: 8, alpha: 16}}',
        'train: {eval_before: false, eval_after: false}',
      ]);
      const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], { cwd: dir });
      expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
      expect(result.stdout).toContain('vllm replica 0: ready after');
      const run = join(dir, 'runs', 'launched', 'v001');
      const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { kind: string; policy_version: number; time_sync_s: number });
      expect(steps.map((s) => [s.kind, s.policy_version, s.time_sync_s > 0])).toStrictEqual([
        ['train', 1, true],
        ['train', 2, true],
      ]);
      expect(
        ['adapter_config.json', 'adapter_model.safetensors'].map((f) =>
          existsSync(join(run, 'checkpoints', 'sync', 'step-00002', f)),
        ),
      ).toStrictEqual([true, true]);
      expect(existsSync(join(run, 'checkpoints', 'sync', 'step-00001'))).toBe(false);
      // Nothing serving the run's model is left running (the engine's processes name it on their command line).
      expect(processesRunning(join(dir, 'model'))).toStrictEqual([]);
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );

  test.each([
    ['vllm', launchedVllmYaml()],
    ['sglang', `  engine: {kind: sglang, command: ${JSON.stringify(embeddedSglangCommand)}, startup_timeout_s: 120}`],
  ])(
    "returns a finished %s full fine-tuning run whose engine sampled each step from the trainer's newest weights",
    async (kind, engine) => {
      const name = `launched-full-${kind}`;
      const { dir, recipe } = await writeRecipe(name, [engine, 'train: {eval_before: false, eval_after: false}'], true);
      const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], { cwd: dir });
      expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
      const run = join(dir, 'runs', name, 'v001');
      const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, number>);
      // Step 2's episodes ran after step 1's weights were reloaded into the engine: had the reload not
      // taken, the trainer's logprobs would differ from the engine's by what step 1 changed.
      expect(steps.map((s) => [s.policy_version, s.time_sync_s > 0, s['train/mismatch_max'] < 1e-4])).toStrictEqual([
        [1, true, true],
        [2, true, true],
      ]);
      expect(readdirSync(join(run, 'checkpoints', 'sync', 'step-00002')).sort()).toStrictEqual([
        'config.json',
        'model.safetensors',
      ]);
      // sync/bytes: what the step's sync wrote (the files of step 2's sync directory, kept until the next one).
      const written = ['config.json', 'model.safetensors'].map(
        (f) => statSync(join(run, 'checkpoints', 'sync', 'step-00002', f)).size,
      );
      expect([steps[1]!['sync/bytes'], steps[1]!['sync/tensors']]).toStrictEqual([
        written[0]! + written[1]!,
        undefined,
      ]);
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );

  test(
    'returns a finished full fine-tuning run whose weights reached vLLM by broadcast, with no file written for it',
    async () => {
      const { dir, recipe } = await writeRecipe(
        'launched-broadcast',
        [launchedVllmYaml({ weight_sync: 'broadcast' }), 'train: {eval_before: false, eval_after: false}'],
        true,
      );
      const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`, ...TRAINER_ON_VLLM_TORCH], {
        cwd: dir,
      });
      expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
      const run = join(dir, 'runs', 'launched-broadcast', 'v001');
      const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, number>);
      // As with the disk reload: step 2 sampled from step 1's weights, so trainer and engine logprobs agree.
      expect(steps.map((s) => [s.policy_version, s['train/mismatch_max'] < 1e-4])).toStrictEqual([
        [1, true],
        [2, true],
      ]);
      // Every weight of the model once per sync, in the served dtype (float32 here: 4 bytes a parameter).
      const facts = JSON.parse(readFileSync(join(run, 'manifest.json'), 'utf8')) as {
        parameters: number;
        weight_sync: string;
      };
      expect(steps.map((s) => [s['sync/bytes'], s['sync/tensors']! > 0])).toStrictEqual([
        [facts.parameters * 4, true],
        [facts.parameters * 4, true],
      ]);
      expect(facts.weight_sync).toBe('full (broadcast)');
      expect(existsSync(join(run, 'checkpoints', 'sync'))).toBe(false);
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );

  // The recipe's GPU placement needs a machine with GPUs (a fake nvidia-smi stands in for one): the stand-in only.
  test.skipIf(REAL_VLLM)(
    'returns a finished run of recipes/gsm8k-grpo.yaml as shipped but for the model, the engine command and the run size',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'atk-gsm8k-grpo-'));
      // What a GPU machine provides is swapped for what runs here: the tiny model, the stand-in for `vllm serve`,
      // and groups without signal kept (the tiny model never solves a GSM8K problem; dropped, nothing would train or sync).
      // The recipe's placement stays: the engine on GPU 0, the trainer on GPU 1 (on CPU here, as CUDA is absent).
      const overrides = [
        `model.path=${join(projectRoot(), 'models', 'tiny-arith')}`,
        `model.engine.command=${JSON.stringify(embeddedVllmCommand)}`,
        'model.engine.startup_timeout_s=120',
        'algorithm.drop_zero_variance_groups=false',
        'train.steps=2',
        'train.tasks_per_step=2',
        'algorithm.group_size=2',
        'dataset.eval_limit=2',
        'train.eval_every=0',
        'agent.max_new_tokens=32',
        'rollout.concurrency=4',
        `output.runs_dir=${join(dir, 'runs')}`,
      ];
      // The preflight refuses GPU indices the machine lacks, and this one has none: an nvidia-smi on PATH that
      // reports two GPUs stands in for the machine the recipe was written for.
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(
        join(bin, 'nvidia-smi'),
        '#!/bin/sh\nprintf "NVIDIA H100 80GB HBM3, 81559 MiB, 550.54\\nNVIDIA H100 80GB HBM3, 81559 MiB, 550.54\\n"\n',
        { mode: 0o755 },
      );
      const result = await runAtk(['run', join(projectRoot(), 'recipes', 'gsm8k-grpo.yaml'), ...overrides], {
        cwd: dir,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } as Record<string, string>,
      });
      expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
      const run = join(dir, 'runs', 'gsm8k-grpo', 'v001');
      const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, number | string>)
        .filter((l) => l.kind === 'train');
      expect(
        steps.map((s) => [s.policy_version, Number(s.time_sync_s) > 0, Number(s['train/mismatch_max']) < 1e-4]),
      ).toStrictEqual([
        [1, true, true],
        [2, true, true],
      ]);
      const adapter = JSON.parse(
        readFileSync(join(run, 'checkpoints', 'sync', 'step-00002', 'adapter_config.json'), 'utf8'),
      ) as { r: number; lora_alpha: number };
      expect([adapter.r, adapter.lora_alpha]).toStrictEqual([32, 64]);
      const engineLog = readFileSync(join(run, 'logs', 'engine.log'), 'utf8');
      expect(engineLog).toContain("'--enable-lora', '--max-lora-rank', '32'");
      expect(engineLog).toContain('"CUDA_VISIBLE_DEVICES": "0"');
    },
  );

  test(
    'returns a finished run with max_staleness 1: each step after the first trains on episodes sampled one version back, with TIS on',
    async () => {
      const { dir, recipe } = await writeRecipe(
        'launched-async',
        [
          launchedVllmYaml(),
          'algorithm: {lora: {rank: 8, alpha: 16}, drop_zero_variance_groups: false}',
          'train: {steps: 3, eval_before: false, eval_after: false}',
          'rollout: {max_staleness: 1, concurrency: 4}',
        ],
        true,
      );
      const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], { cwd: dir });
      expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
      const run = join(dir, 'runs', 'launched-async', 'v001');
      expect(readFileSync(join(run, 'resolved.yaml'), 'utf8')).toMatch(
        / {2}mismatch:\n {4}mode: tis\n {4}level: token\n {4}low: 0\n {4}high: 2\n[\s\S]*max_staleness: 1\n/,
      );
      const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, number>);
      // Step 2's first four episodes (the concurrency) started while step 1 trained, from policy 0; step 2 trains policy 1.
      expect(
        steps.map((s) => [
          s.policy_version,
          s.staleness_max,
          s.stale_groups_dropped,
          typeof s['train/tis_weight_mean'],
        ]),
      ).toStrictEqual([
        [1, 0, 0, 'number'],
        [2, 1, 0, 'number'],
        [3, 1, 0, 'number'],
      ]);
      // Engine time counts toward the step that records it: a step collected wholly while the one before
      // it trained shows its generation there, so only the run as a whole must show the engine busy.
      expect(steps.every((s) => s.trainer_busy_share > 0)).toBe(true);
      expect(steps.reduce((sum, s) => sum + s.engine_busy_share, 0)).toBeGreaterThan(0);
      const step2 = readFileSync(join(run, 'trajectories', 'step-00002.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { trajectory: { segments: unknown[][] } });
      const turnVersions = new Set(
        step2.flatMap((r) => r.trajectory.segments.filter((seg) => seg[0] === 'model').map((seg) => seg[3])),
      );
      expect(turnVersions.has(0)).toBe(true);
      // The newest adapter stays for the engine; the replaced ones' files went with them.
      expect(
        ['step-00001', 'step-00002', 'step-00003'].map((step) =>
          existsSync(join(run, 'checkpoints', 'sync', step, 'adapter_config.json')),
        ),
      ).toStrictEqual([false, false, true]);
    },
    Math.max(300_000, LAUNCHED_TEST_TIMEOUT_MS),
  );

  test('returns exit code 130 with the engine stopped when Ctrl-C comes while the engine loads', async () => {
    const { dir, recipe } = await writeRecipe('slow', [
      `  engine: {kind: vllm, command: ${JSON.stringify(doubleEngineCommand)}}`,
      'algorithm: {lora: {rank: 8}}',
    ]);
    const [file, ...args] = tsScript('atk-cli.ts');
    // The double waits a minute before listening: a model that takes long to load.
    const cli = execa(file, [...args, 'run', recipe, `output.runs_dir=${join(dir, 'runs')}`], {
      reject: false,
      cwd: dir,
      env: { ATK_DOUBLE_DELAY_MS: '60000' },
    });
    const log = join(dir, 'runs', 'slow', 'v001', 'logs', 'engine.log');
    let enginePid = 0;
    for (let waited = 0; !enginePid && waited < 60_000; waited += 100) {
      await sleep(100);
      enginePid = Number(/engine-double: pid (\d+)/.exec(existsSync(log) ? readFileSync(log, 'utf8') : '')?.[1] ?? 0);
    }
    expect(alive(enginePid)).toBe(true);
    cli.kill('SIGINT');
    const result = await cli;
    expect([result.exitCode, alive(enginePid)]).toStrictEqual([130, false]);
    expect(result.stderr).toContain('interrupting');
  });
});
