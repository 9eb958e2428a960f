import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runAtk } from '../../src/__fixtures__/atk-process.js';
import {
  LAUNCHED_TEST_TIMEOUT_MS,
  launchedVllmEngine,
  launchedVllmSettings,
  REAL_VLLM,
  TINY_ARITH_MODEL,
} from '../../src/__fixtures__/launched-vllm.js';
import { tempDirs } from '../../src/__fixtures__/temp-dirs.js';
import { launchEngines, type LaunchedEngines } from '../../src/engines/launch/index.js';
import type { Generation } from '../../src/engines/types.js';
import { createVllmClient } from '../../src/engines/vllm.js';
import { launchTrainer } from '../../src/trainer/index.js';
import { loadModelTokenizer } from '../../src/tokens/model-tokenizer.js';
import { projectRoot } from '../../src/util/paths.js';

// What atk claims about vLLM, run against real vLLM: `npm run test:vllm` (scripts/test-vllm.mjs) sets vLLM
// up in atk's venv and sets ATK_TEST_VLLM=real; the fast suite skips this file. The quickstart job (the
// shipped tiny-arith model on arith with the calculator) evaluated through vLLM launched by atk, through a
// running vLLM (kind url) and through atk's gateway with an openai-client agent, each episode for episode
// against the embedded engine; then trained with full-weight and with LoRA syncs into vLLM. And a real
// pretrained model, SmolLM2-135M-Instruct (`atk model fetch smollm2-135m-instruct` imports it; the script
// names its directory in ATK_TEST_SMOLLM2 when it is there), served by vLLM as by the embedded engine.
const tempDir = tempDirs('atk-real-vllm-');
const QUICKSTART = join(projectRoot(), 'recipes', 'quickstart.yaml');
const EVAL_TASKS = 40;
/** The TypeScript agent written with the official openai client (examples/external-typescript). */
const OPENAI_AGENT = {
  command: [process.execPath, '--import', 'tsx', join(projectRoot(), 'examples', 'external-typescript', 'agent.ts')],
  cwd: projectRoot(),
  timeout_s: 120,
};
/** The quickstart's job with that agent in place of the built-in one, which brings its own calculator. */
const OPENAI_AGENT_RECIPE = { tools: [], agent: { external: OPENAI_AGENT } };

/** One eval episode as results.jsonl records it. */
interface EvalEpisode {
  readonly task_id: string;
  readonly success: boolean;
  readonly trajectory: { readonly ids: readonly number[]; readonly logprobs: readonly (number | null)[] };
}

/**
 * Runs `atk eval` of the quickstart as recipe `name` with `recipe` merged in (its `model` keys into the
 * quickstart's), greedy on the first EVAL_TASKS held-out tasks; returns its episodes by task.
 */
async function evalEpisodes(name: string, recipe: Record<string, unknown>): Promise<Map<string, EvalEpisode>> {
  const dir = tempDir();
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify({ name, extends: QUICKSTART, ...recipe }));
  const result = await runAtk(
    ['eval', file, '--limit', String(EVAL_TASKS), '--no-tui', `output.runs_dir=${join(dir, 'runs')}`],
    { cwd: dir },
  );
  expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
  const lines = readFileSync(join(dir, 'runs', `${name}-eval`, 'v001', 'eval', 'base', 'results.jsonl'), 'utf8');
  const episodes = lines
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EvalEpisode);
  return new Map(episodes.map((e) => [e.task_id, e]));
}

/** Asserts two evals of the same tasks produced the same tokens episode for episode, logprobs within `tolerance`. */
function expectSameEpisodes(
  served: Map<string, EvalEpisode>,
  reference: Map<string, EvalEpisode>,
  tolerance = 1e-4,
): void {
  expect([...served.keys()].sort()).toStrictEqual([...reference.keys()].sort());
  expect(reference.size).toBe(EVAL_TASKS);
  let gap = 0;
  for (const [task, episode] of served) {
    const expected = reference.get(task)!;
    expect([task, episode.trajectory.ids]).toStrictEqual([task, expected.trajectory.ids]);
    expect(episode.success).toBe(expected.success);
    episode.trajectory.logprobs.forEach((lp, i) => {
      const other = expected.trajectory.logprobs[i];
      if (lp !== null && other !== null && other !== undefined) gap = Math.max(gap, Math.abs(lp - other));
    });
  }
  expect(gap).toBeLessThan(tolerance);
}

describe.skipIf(!REAL_VLLM)('atk eval through real vLLM', () => {
  let embedded: Map<string, EvalEpisode>;
  let embeddedAgent: Map<string, EvalEpisode>;
  beforeAll(async () => {
    embedded = await evalEpisodes('embedded', {});
    embeddedAgent = await evalEpisodes('embedded-agent', OPENAI_AGENT_RECIPE);
  }, LAUNCHED_TEST_TIMEOUT_MS);

  test(
    'returns the embedded engine’s episodes, token for token, through a vLLM atk launches',
    async () => {
      expectSameEpisodes(
        await evalEpisodes('launched', { model: { engine: { kind: 'vllm', ...launchedVllmSettings() } } }),
        embedded,
      );
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );

  describe('a running vLLM (kind url)', () => {
    let server: LaunchedEngines;
    beforeAll(async () => {
      server = await launchEngines({
        kind: 'vllm',
        config: launchedVllmEngine(),
        model: TINY_ARITH_MODEL,
        // The name a url engine's requests use (src/engines/url-engines.ts).
        servedModelName: 'policy',
        logsDir: join(tempDir(), 'logs'),
        requestTimeoutMs: 120_000,
      });
    }, LAUNCHED_TEST_TIMEOUT_MS);
    afterAll(() => server?.stop());

    const urlEngine = () => ({ model: { engine: { kind: 'url', url: server.processes[0]!.baseUrl } } });

    test(
      'returns the embedded engine’s episodes, token for token, through its URL',
      async () => {
        expectSameEpisodes(await evalEpisodes('url', urlEngine()), embedded);
      },
      LAUNCHED_TEST_TIMEOUT_MS,
    );

    test(
      'returns the embedded engine’s episodes, token for token, for an openai-client agent through atk’s gateway in front of it',
      async () => {
        const episodes = await evalEpisodes('url-agent', { ...urlEngine(), ...OPENAI_AGENT_RECIPE });
        expectSameEpisodes(episodes, embeddedAgent);
        // The agent called the calculator through the gateway: the tool results are in its trajectories.
        expect([...episodes.values()].filter((e) => e.success).length).toBeGreaterThan(EVAL_TASKS / 2);
      },
      LAUNCHED_TEST_TIMEOUT_MS,
    );
  });
});

/** Held-out accuracy before and after a short quickstart run with `recipe` merged in, and its train steps. */
async function trainedRun(
  name: string,
  recipe: Record<string, unknown>,
): Promise<{ before: number; after: number; steps: Record<string, number>[] }> {
  const dir = tempDir();
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify({ name, extends: QUICKSTART, ...recipe }));
  const result = await runAtk(['run', file, '--no-tui', `output.runs_dir=${join(dir, 'runs')}`], { cwd: dir });
  expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
  const lines = readFileSync(join(dir, 'runs', name, 'v001', 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number | string>);
  const evals = lines.filter((l) => l.kind === 'eval').map((l) => Number(l.accuracy));
  return {
    before: evals[0]!,
    after: evals.at(-1)!,
    steps: lines.filter((l) => l.kind === 'train') as Record<string, number>[],
  };
}

describe.skipIf(!REAL_VLLM)('atk run with real vLLM', () => {
  const engine = { kind: 'vllm', ...launchedVllmSettings() };

  test.each([
    ['full-weight', {}],
    ['LoRA', { algorithm: { lora: { rank: 16, alpha: 32 }, learning_rate: 2.0e-3 } }],
  ])(
    'returns a run whose %s syncs reached vLLM every step and that gains on held-out',
    async (name, recipe) => {
      const run = await trainedRun(name, {
        ...recipe,
        model: { engine },
        dataset: { eval_limit: 50 },
        train: { steps: 3 },
      });
      // Each step sampled from the previous step's weights as the trainer holds them.
      expect(run.steps.map((s) => [s.policy_version, s['train/mismatch_max']! < 1e-3])).toStrictEqual([
        [1, true],
        [2, true],
        [3, true],
      ]);
      console.log(`${name} syncs into real vLLM: held-out accuracy ${run.before} -> ${run.after} in 3 steps`);
      expect(run.after - run.before).toBeGreaterThanOrEqual(0.1);
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );
});

const SMOLLM2 = process.env.ATK_TEST_SMOLLM2;

describe.skipIf(!REAL_VLLM || !SMOLLM2)('SmolLM2-135M-Instruct served by real vLLM', () => {
  test(
    'returns the embedded engine’s greedy tokens for a chat prompt, logprobs within float32 noise',
    async () => {
      const dir = SMOLLM2!;
      const tokenizer = await loadModelTokenizer(dir);
      const prompt = tokenizer.encode(
        tokenizer.renderChat([{ role: 'user', content: 'What is the capital of France?' }], {
          addGenerationPrompt: true,
        }),
      );
      const params = { maxTokens: 16, temperature: 0, topP: 1, topK: -1, stopTokenIds: [...tokenizer.eosTokenIds] };
      const logs = tempDir();
      const trainer = await launchTrainer({
        logFile: join(logs, 'trainer.log'),
        threads: 2,
        startupTimeoutMs: 300_000,
      });
      let expected: Generation;
      try {
        await trainer.client.loadModel({
          path: dir,
          backend: 'builtin',
          device: 'cpu',
          dtype: 'float32',
          train: { seed: 0 },
        });
        expected = await createVllmClient({ baseUrl: trainer.engineUrl, model: 'policy', timeoutMs: 600_000 }).generate(
          prompt,
          params,
        );
      } finally {
        await trainer.stop();
      }
      const server = await launchEngines({
        kind: 'vllm',
        config: launchedVllmEngine(),
        model: dir,
        logsDir: join(logs, 'engine'),
        requestTimeoutMs: 600_000,
      });
      try {
        const served = await server.engine.generate(prompt, params);
        expect(tokenizer.decode(served.tokenIds)).toMatch(/Paris/);
        expect(served.tokenIds).toStrictEqual(expected.tokenIds);
        const gap = Math.max(...served.logprobs.map((lp, i) => Math.abs(lp - expected.logprobs[i]!)));
        expect(gap).toBeLessThan(1e-3);
      } finally {
        await server.stop();
      }
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );
});
