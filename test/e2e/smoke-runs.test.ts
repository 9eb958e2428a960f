/**
 * The CI smoke recipes, end to end through the built CLI with the real trainer and embedded
 * engine: each must leave a complete run directory, and the domain smokes must record what their
 * domain is about (deepcoder: the run_python tool offered and the code_tests verdicts; tau2: the
 * greeting and the scripted user as environment tokens, and the evaluator's basis and parts).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_GREETING } from '../../src/domains/tau2/index.js';
import { loadModelTokenizer, TokenTrajectory } from '../../src/tokens/index.js';
import { projectRoot } from '../../src/util/paths.js';
import { execa } from 'execa';
import { atkRun, BIN, loadCheckpoint, onlyRun, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

type StepRecord = Record<string, unknown> & {
  reward: number;
  reward_parts: Record<string, number>;
  reward_info?: Record<string, unknown>;
  finish_reason: string;
  messages: { role: string; content: Record<string, unknown>[] }[];
};

/** Each segment of a recorded trajectory: source, its tokens' mask values and its decoded text (the smokes' model is tiny-arith). */
async function decodedSegments(record: StepRecord): Promise<{ source: string; masks: number[]; text: string }[]> {
  const tokenizer = await loadModelTokenizer(join(projectRoot(), 'models', 'tiny-arith'));
  const trajectory = TokenTrajectory.fromJSON(record.trajectory);
  const mask = trajectory.mask();
  return trajectory.segments.map((s) => ({
    source: s.source,
    masks: [...new Set(mask.slice(s.start, s.start + s.length))],
    text: tokenizer.decode(trajectory.ids.slice(s.start, s.start + s.length)),
  }));
}

/**
 * deepcoder: what the seeded run (seed 0, 2 tasks x 2 episodes) does, exactly: run_python reaches the prompt,
 * but tiny-arith's 64 tokens never hold a run_python call or a fenced code block. One episode makes two malformed
 * calls (never closed with </tool_call>), each answered by an error result, and ends at max_turns; the other three are
 * truncated in their first reply (a cut-off call is never run). code_tests scores every one 0 of the task's 2
 * tests for want of code. A solved task and failed tests with their kinds are what code_tests'
 * and run_python's own tests cover (src/rewards/code-tests.test.ts, src/tools/run-python.test.ts).
 */
async function deepcoderChecks(records: StepRecord[]): Promise<void> {
  // tiny-arith's chat template lists tools as one system line of signatures.
  const prompt = (await decodedSegments(records[0]!))[0]!;
  expect([prompt.source, prompt.masks, prompt.text.includes('Tools: run_python(code, stdin, tests)')]).toStrictEqual([
    'prompt',
    [0],
    true,
  ]);
  const blocks = (record: StepRecord, key: 'toolUse' | 'toolResult') =>
    record.messages.flatMap((m) => m.content.filter((b) => b[key] !== undefined));
  const episodes = records.map((record) => [
    record.finish_reason,
    blocks(record, 'toolUse').length,
    blocks(record, 'toolResult').length,
    blocks(record, 'toolUse').filter((b) => (b.toolUse as { name?: string }).name === 'run_python').length,
  ]);
  expect(episodes.sort()).toStrictEqual([
    ['limitTurns', 2, 2, 0],
    ['truncated', 0, 0, 0],
    ['truncated', 1, 0, 0],
    ['truncated', 1, 0, 0],
  ]);
  for (const record of records)
    expect([record.reward, record.reward_parts, record.reward_info]).toStrictEqual([
      0,
      { passed: 0, total: 2 },
      expect.objectContaining({ reason: 'no fenced python code block in the final answer', failures: [] }),
    ]);
}

/**
 * tau2: what the seeded run (seed 0, 3 tasks x 2 episodes) does, exactly: every episode opens with the
 * reference greeting and the first scripted customer line as prompt tokens (mask 0), one episode gets the
 * customer's next line as a user turn (mask 0), and every one is truncated in a reply, so all six end
 * without a stop token and score 0 with no parts on the judge-free basis. An episode that ends on the
 * customer's stop, scored on DB and COMMUNICATE, is tested on the scripted user with a scripted policy
 * (src/rollout/user-simulation.test.ts), and in real runs by the help desk's conversations, which end on
 * the scripted customer's stop (test/e2e/helpdesk-learning.test.ts, models/tiny-helpdesk).
 */
async function tau2Checks(records: StepRecord[]): Promise<void> {
  const userTurns: number[][] = [];
  for (const record of records) {
    expect(record.messages.slice(1, 3).map((m) => [m.role, m.content[0]!.text])).toStrictEqual([
      ['assistant', AGENT_GREETING],
      ['user', 'Hi, I want to cancel my pending order #W2378156 because I no longer need it.'],
    ]);
    const segments = await decodedSegments(record);
    expect([segments[0]!.source, segments[0]!.masks]).toStrictEqual(['prompt', [0]]);
    expect(segments[0]!.text).toContain(
      `${AGENT_GREETING}<|im_end|>\n<|im_start|>user\nHi, I want to cancel my pending order #W2378156`,
    );
    userTurns.push(...segments.filter((s) => s.source === 'user').map((s) => s.masks));
    expect([record.finish_reason, record.reward, record.reward_parts, record.reward_info]).toStrictEqual([
      'truncated',
      0,
      {},
      expect.objectContaining({ basis: ['DB', 'COMMUNICATE'], note: 'episode ended without a stop token: truncated' }),
    ]);
  }
  expect([records.length, userTurns]).toStrictEqual([6, [[0]]]);
}

/**
 * quickstart with dynamic sampling and a curriculum over 6 tasks: each step's metrics count the groups its
 * trajectories hold and the tasks it skipped, the cursor moves by both, and the curriculum saved with the
 * last checkpoint is each task's outcome in its last group, as the trajectories show it.
 */
function dynamicSamplingChecks(dir: string): void {
  const train = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
  const last: Record<string, string> = {};
  let position = 0;
  for (const line of train) {
    const records = readJsonl(join(dir, 'trajectories', `step-${String(line.step).padStart(5, '0')}.jsonl`));
    const groups = [...new Set(records.map((r) => r.group as number))].sort((a, b) => a - b);
    for (const g of groups) {
      const scored = records.filter((r) => r.group === g && !r.failed);
      const solved = scored.filter((r) => r.success).length;
      if (scored.length > 0)
        last[scored[0]!.task_id as string] = solved === scored.length ? 's' : solved === 0 ? 'u' : 'm';
    }
    position +=
      groups.length + (line['curriculum/skipped_solved'] as number) + (line['curriculum/skipped_unsolved'] as number);
    expect([line['dynamic_sampling/groups_sampled'], line['data/position']]).toStrictEqual([groups.length, position]);
    expect(line['dynamic_sampling/groups_kept']).toBe(line.groups);
    expect([1, 2]).toContain(line['dynamic_sampling/rounds']);
  }
  const saved = readJson(join(dir, 'checkpoints', `step-${String(train.length).padStart(5, '0')}`, 'data-stream.json'));
  expect(saved).toStrictEqual({ position, curriculum: last });
}

const SMOKES: readonly {
  recipe: string;
  name: string;
  steps: number;
  /** Recipe overrides on the command line, and what the run directory must show of them. */
  overrides?: readonly string[];
  checkRun?: (dir: string) => void;
  check?: (records: StepRecord[]) => Promise<void>;
}[] = [
  { recipe: 'recipes/smoke/quickstart.yaml', name: 'smoke-quickstart', steps: 2 },
  {
    recipe: 'recipes/smoke/quickstart.yaml',
    name: 'smoke-quickstart',
    steps: 3,
    overrides: [
      'train.steps=3',
      'algorithm.dynamic_sampling.max_rounds=2',
      'dataset.curriculum.skip_solved=1',
      'dataset.limit=6',
    ],
    checkRun: dynamicSamplingChecks,
  },
  { recipe: 'recipes/smoke/gsm8k.yaml', name: 'smoke-gsm8k', steps: 1 },
  { recipe: 'recipes/smoke/deepcoder.yaml', name: 'smoke-deepcoder', steps: 1, check: deepcoderChecks },
  { recipe: 'recipes/smoke/tau2.yaml', name: 'smoke-tau2', steps: 1, check: tau2Checks },
];

describe('smoke recipes', () => {
  for (const smoke of SMOKES) {
    it(`returns a complete run directory for ${[smoke.recipe, ...(smoke.overrides ?? [])].join(' ')}`, async () => {
      const runsDir = tempRunsDir();
      const result = await atkRun([smoke.recipe, ...(smoke.overrides ?? [])], runsDir);
      expect(result.stderr).toBe('');
      expect(result.exitCode).toBe(0);
      const dir = onlyRun(runsDir, smoke.name);

      expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
      for (const file of ['recipe.yaml', 'resolved.yaml', 'summary.json', 'logs/trainer.log'])
        expect(existsSync(join(dir, file))).toBe(true);

      const train = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
      expect(train.map((l) => l.step)).toStrictEqual(Array.from({ length: smoke.steps }, (_, i) => i + 1));
      for (const line of train) expect(Number.isFinite(line.reward_mean)).toBe(true);

      for (let step = 1; step <= smoke.steps; step++) {
        const records = readJsonl(join(dir, 'trajectories', `step-${String(step).padStart(5, '0')}.jsonl`));
        expect(records.length).toBeGreaterThan(0);
        for (const record of records) {
          expect(Number.isFinite(record.reward)).toBe(true);
          const trajectory = TokenTrajectory.fromJSON(record.trajectory);
          const mask = trajectory.mask();
          const full = trajectory.logprobsFull();
          expect(trajectory.ids.length).toBeGreaterThan(0);
          expect(mask.some((m) => m === 1)).toBe(true);
          // logprobs exist exactly where the engine generated the token
          expect(full.map((l) => (l === null ? 0 : 1))).toStrictEqual(mask);
        }
        await smoke.check?.(records as StepRecord[]);
      }
      smoke.checkRun?.(dir);

      const checkpoints = readdirSync(join(dir, 'checkpoints'));
      expect(checkpoints).toContain(`step-${String(smoke.steps).padStart(5, '0')}`);
      expect(
        await loadCheckpoint(join(dir, 'checkpoints', `step-${String(smoke.steps).padStart(5, '0')}`)),
      ).toBeGreaterThan(100_000);

      // The newest checkpoint exports as a loadable Hugging Face directory with the run's tokenizer.
      const out = join(runsDir, 'exported');
      const exported = await execa('node', [BIN, 'export', dir, out], { reject: false });
      expect(exported.exitCode).toBe(0);
      expect(readdirSync(out).sort()).toEqual(
        expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']),
      );
      expect(await loadCheckpoint(out)).toBeGreaterThan(100_000);
    });
  }
});
