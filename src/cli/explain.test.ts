import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { ExplainedTerm } from '../algorithms/objective.js';
import { ConfigError } from '../errors/index.js';
import { runExplain } from './explain.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-explain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BASE =
  'name: r\nmodel:\n  path: Qwen/Qwen3-0.6B\ndataset:\n  name: arith\ntools:\n  - name: calculator\nreward:\n  name: math_answer\n';

function recipe(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

async function terms(file: string, overrides: string[] = []): Promise<Record<string, ExplainedTerm>> {
  const list = JSON.parse(await runExplain({ recipe: file, overrides, json: true })) as ExplainedTerm[];
  return Object.fromEntries(list.map((t) => [t.name, t]));
}

describe('runExplain', () => {
  test('returns each setting with its value and origin: recipe line, base file line, override, preset, default', async () => {
    const base = recipe('base.yaml', `${BASE}algorithm:\n  group_size: 4\n`);
    const file = recipe('cispo.yaml', `extends: ${base}\nname: c\nalgorithm:\n  name: cispo\n`);
    const loss = (await terms(file, ['algorithm.clip_high=2']))['policy loss']!;
    expect(loss.settings).toStrictEqual([
      { path: 'algorithm.name', value: 'cispo', origin: { kind: 'written', at: { file, line: 4, col: 3 } } },
      { path: 'algorithm.clip_low', value: 1, origin: { kind: 'preset', preset: 'cispo' } },
      {
        path: 'algorithm.clip_high',
        value: 2,
        origin: { kind: 'written', at: { file: '<overrides>', line: 1, col: 11 } },
      },
      { path: 'algorithm.updates_per_step', value: 1, origin: { kind: 'default' } },
    ]);
    expect(loss.formula).toContain('loss_t = -sg[clip(r_t, 0, 3)] A_i log pi(y_t) (every token keeps its gradient)');
    expect(loss.paper).toBe('MiniMax 2025, MiniMax-M1 (CISPO), arXiv 2506.13585, eq. 4-5');
    const advantage = (await terms(file)).advantage!;
    expect(advantage.settings[0]).toStrictEqual({
      path: 'algorithm.group_size',
      value: 4,
      origin: { kind: 'written', at: { file: expect.stringMatching(/base\.yaml$/), line: 11, col: 3 } },
    });
  });

  test('returns the mismatch correction stale rollouts resolve to, and tis_cap as its older spelling', async () => {
    const stale = (await terms(recipe('stale.yaml', `${BASE}rollout:\n  max_staleness: 1\n`)))['mismatch correction']!;
    expect(stale.summary).toBe('truncated importance weights per token');
    expect(stale.settings.map((s) => [s.path, s.value, s.origin])).toStrictEqual([
      ['algorithm.mismatch.mode', 'tis', { kind: 'derived', from: 'rollout.max_staleness 1 > 0' }],
      ['algorithm.mismatch.level', 'token', { kind: 'derived', from: 'rollout.max_staleness 1 > 0' }],
      ['algorithm.mismatch.low', 0, { kind: 'derived', from: 'rollout.max_staleness 1 > 0' }],
      ['algorithm.mismatch.high', 2, { kind: 'derived', from: 'rollout.max_staleness 1 > 0' }],
      ['algorithm.mismatch.trust_region', true, { kind: 'derived', from: 'rollout.max_staleness 1 > 0' }],
    ]);
    expect(stale.formula[2]).toBe(
      'tokens PPO would clip against pi_engine get no gradient (the trust region stays at the sampler)',
    );
    const capped = (await terms(recipe('cap.yaml', `${BASE}algorithm:\n  tis_cap: 3\n`)))['mismatch correction']!;
    expect(capped.settings.map((s) => s.origin)).toStrictEqual(
      Array(5).fill({ kind: 'derived', from: 'algorithm.tis_cap (its older spelling)' }),
    );
    expect(capped.formula[1]).toBe('loss_t *= sg[clip(rho, 0, 3)]');
  });

  test('returns a written mismatch correction without a trust region unless it sets one, IcePop weights under mask', async () => {
    const text = `${BASE}algorithm:\n  mismatch: {mode: mask, level: geometric}\n`;
    const term = (await terms(recipe('icepop.yaml', text)))['mismatch correction']!;
    expect(term.summary).toBe('masked importance weights per sequence (geometric mean)');
    expect(term.formula).toStrictEqual([
      'rho_i = (prod_t pi_trainer(y_t) / pi_engine(y_t))^(1/|y_i|), one per sequence (geometric mean), pi_trainer under the weights the step starts from',
      'loss_t *= sg[rho] if 0.5 <= rho <= 2 else 0',
      'a token outside the range still counts in the aggregation (|y_i|, the token count); share: train/mismatch_masked_fraction',
    ]);
    expect(term.settings.map((s) => [s.path, s.value, s.origin.kind])).toStrictEqual([
      ['algorithm.mismatch.mode', 'mask', 'written'],
      ['algorithm.mismatch.level', 'geometric', 'written'],
      ['algorithm.mismatch.low', 0.5, 'derived'],
      ['algorithm.mismatch.high', 2, 'derived'],
      ['algorithm.mismatch.masked_tokens', 'count', 'default'],
      ['algorithm.mismatch.trust_region', false, 'default'],
    ]);
    expect(term.paper).toContain('IcePop');
    const dropped = `${BASE}algorithm:\n  mismatch: {mode: reject, masked_tokens: drop, trust_region: true}\n`;
    const rejection = (await terms(recipe('reject.yaml', dropped)))['mismatch correction']!;
    expect(rejection.formula.slice(1)).toStrictEqual([
      'loss_t *= 1 if 0.5 <= rho <= 2 else 0',
      'a token outside the range leaves the aggregation counts, a sequence with none left the sequence count; share: train/mismatch_masked_fraction',
      'tokens PPO would clip against pi_engine get no gradient (the trust region stays at the sampler)',
    ]);
  });

  test('returns the std, dual-clip, k2 and token-sum settings where a recipe writes them, and REINFORCE as -A log pi', async () => {
    const text = `${BASE}algorithm:\n  std: population\n  dual_clip: 3\n  kl_coef: 0.1\n  kl_estimator: k2\n  loss_aggregation: token-sum\n`;
    const all = await terms(recipe('variants.yaml', text));
    expect(all.advantage!.summary).toBe("group-mean baseline, divided by the group's population std");
    expect(all.advantage!.formula[0]).toBe(
      'A_i = (r_i - mean_j r_j) / (std_j r_j + 1e-6), std_j r_j = sqrt(sum_j (r_j - mean r)^2 / G), over the 8 episodes j of a task; every token of y_i gets A_i',
    );
    expect(all.advantage!.settings.map((s) => s.path)).toContain('algorithm.std');
    expect(all['policy loss']!.summary).toBe('PPO clipped surrogate per token, clipped at [0.8, 1.28], dual-clip at 3');
    expect(all['policy loss']!.formula[1]).toBe(
      'loss_t = -min(r_t A_i, clip(r_t, 0.8, 1.28) A_i) if A_i >= 0, else -max(min(r_t A_i, clip(r_t, 0.8, 1.28) A_i), 3 A_i)',
    );
    expect(all['policy loss']!.settings.find((s) => s.path === 'algorithm.dual_clip')?.value).toBe(3);
    expect(all['KL penalty']!.formula).toStrictEqual(['loss_t += 0.1 * k2 = (log pi(y_t) - log pi_ref(y_t))^2 / 2']);
    expect(all.aggregation!.formula[0]).toBe(
      'L = sum_i sum_t loss_i,t (no normaliser: the gradient grows with the batch)',
    );
    const grpo = await terms(recipe('grpo.yaml', BASE));
    expect(grpo.advantage!.summary).toBe("group-mean baseline, divided by the group's unbiased std");
    expect(grpo.advantage!.settings.find((s) => s.path === 'algorithm.std')).toStrictEqual({
      path: 'algorithm.std',
      value: 'unbiased',
      origin: { kind: 'default' },
    });
    const reinforce = (await terms(recipe('reinforce.yaml', `${BASE}algorithm:\n  name: reinforce\n`)))['policy loss']!;
    expect(reinforce.formula[0]).toBe('loss_t = -A_i log pi(y_t)');
    expect(reinforce.settings.map((s) => s.path)).toStrictEqual(['algorithm.name', 'algorithm.updates_per_step']);
  });

  test('returns the distillation term of a distill recipe: its formula with the reward weight, and the teacher', async () => {
    const text = `${BASE}teacher:\n  path: /models/teacher\nalgorithm:\n  name: distill\n  distill:\n    reward_weight: 0.5\n`;
    const term = (await terms(recipe('distill.yaml', text))).distillation!;
    expect(term.formula[0]).toBe(
      'A_t = log pi_teacher(y_t | y_<t) - log pi_student(y_t | y_<t) + 0.5 * A_i, discount 0 (each token answers for itself)',
    );
    expect(term.settings.map((s) => [s.path, s.value, s.origin.kind])).toStrictEqual([
      ['algorithm.distill.reward_weight', 0.5, 'written'],
      ['teacher.path', '/models/teacher', 'written'],
      ['teacher.engine.kind', 'embedded', 'default'],
    ]);
  });

  test('returns the text with every term, its formula filled in and its paper', async () => {
    const text = await runExplain({
      recipe: recipe('gspo.yaml', `${BASE}algorithm:\n  name: gspo\n`),
      overrides: ['reward.overlong={max_tokens: 1024, buffer: 256}'],
      json: false,
    });
    expect(text.split('\n').filter((l) => /^\S/.test(l))).toStrictEqual([
      `${join(dir, 'gspo.yaml')}: r optimises (algorithm gspo)`,
      'reward shaping: soft overlong punishment added to the task reward',
      "sampling: off: each step's tasks_per_step groups, in data order, every task every epoch",
      "advantage: group-mean baseline, divided by the group's unbiased std",
      'distillation: off: no teacher (algorithm.name distill)',
      'policy loss: GSPO: one length-normalised ratio per sequence, clipped at [0.9997, 1.0004]',
      "mismatch correction: off: the engine's logprobs are pi_old, uncorrected",
      'aggregation: seq-mean-token-mean',
      'KL penalty: off: no reference model is kept',
    ]);
    expect(text).toContain('    R_length = 0 if |y| <= 768; (768 - |y|) / 256 if 768 < |y| <= 1024; -1 beyond\n');
    expect(text).toContain('    from: Zheng et al. 2025, GSPO, arXiv 2507.18071, eq. 5-7 and 11-12\n');
    expect(text).toMatch(
      /\n {2}reward\.overlong\.max_tokens +1024 +override reward\.overlong=\{max_tokens: 1024, buffer: 256\}\n/,
    );
    expect(text).toMatch(/\n {2}algorithm\.clip_low +0\.0003 +preset gspo\n/);
  });

  test('returns the sampling term of dynamic sampling and a curriculum, with their settings and DAPO as its paper', async () => {
    const file = recipe(
      'dapo.yaml',
      `${BASE.replace('  name: arith\n', '  name: arith\n  curriculum: {skip_solved: 2}\n')}algorithm:\n  dynamic_sampling: {}\n`,
    );
    const sampling = (await terms(file, ['train.tasks_per_step=8'])).sampling!;
    expect(sampling.summary).toBe('dynamic sampling: refilled to 8 groups with a reward spread; curriculum');
    expect(sampling.settings).toStrictEqual([
      { path: 'algorithm.dynamic_sampling.max_rounds', value: 3, origin: { kind: 'default' } },
      {
        path: 'train.tasks_per_step',
        value: 8,
        origin: { kind: 'written', at: { file: '<overrides>', line: 1, col: 7 } },
      },
      {
        path: 'dataset.curriculum.skip_solved',
        value: 2,
        origin: { kind: 'written', at: { file, line: 6, col: 16 } },
      },
    ]);
    expect(sampling.formula).toStrictEqual([
      'batch = the first 8 groups with std(R_1..R_G) > 0 (0 < #correct < G for a 0/1 reward)',
      'drawn in up to 3 rounds, each of as many new tasks as groups are still missing; short after the last round: train on those kept',
      'the data stream passes over a task solved in each of its last 2 groups',
    ]);
    expect(sampling.paper).toBe('Yu et al. 2025, DAPO, arXiv 2503.14476, eq. 11 and Algorithm 1');
  });

  test('rejects a combination validate refuses, with the located error', async () => {
    const file = recipe('bad.yaml', `${BASE}algorithm:\n  name: gspo\n  mismatch: {mode: mask}\n`);
    const error = await runExplain({ recipe: file, overrides: [], json: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message.split('\n')[0]).toMatch(
      /bad\.yaml:12:3 {2}algorithm\.mismatch\.level: token-level masking/,
    );
  });
});
