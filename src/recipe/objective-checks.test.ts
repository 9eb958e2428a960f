import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { loadRecipe } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-objective-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BASE =
  'name: r\nmodel:\n  path: Qwen/Qwen3-0.6B\ndataset:\n  name: arith\ntools:\n  - name: calculator\nreward:\n  name: math_answer\n';

/** The one-line problems of a recipe of BASE plus `extra`, or [] when it loads. */
async function problems(extra: string, overrides: string[] = []): Promise<string[]> {
  const file = join(dir, `r${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, BASE + extra);
  const error = await loadRecipe(file, overrides).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error === undefined) return [];
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).message.split('\n').map((line) => line.replace(`${file}:`, ''));
}

describe('objective checks', () => {
  test('rejects token-level mismatch masking under gspo at the level key, and accepts it per sequence or as tis', async () => {
    expect(await problems('algorithm:\n  name: gspo\n  mismatch:\n    mode: mask\n    level: token\n')).toStrictEqual([
      '14:12  algorithm.mismatch.level: token-level masking under gspo drops tokens from a sequence whose ratio and clip are per sequence (the mean over its tokens); use level: sequence or geometric',
    ]);
    expect(await problems('algorithm:\n  name: gspo\n  mismatch: {mode: mask, level: sequence}\n')).toStrictEqual([]);
    expect(await problems('algorithm:\n  name: gspo\n  mismatch: {mode: tis}\n')).toStrictEqual([]);
    expect(await problems('algorithm:\n  name: grpo\n  mismatch: {mode: mask}\n')).toStrictEqual([]);
  });

  test('rejects an override that makes the combination, at the override', async () => {
    expect(await problems('algorithm:\n  name: gspo\n', ['algorithm.mismatch={mode: mask}'])).toStrictEqual([
      '<overrides>:1:11  algorithm.mismatch.level: token-level masking under gspo drops tokens from a sequence whose ratio and clip are per sequence (the mean over its tokens); use level: sequence or geometric',
    ]);
  });

  test('rejects overlong shaping and mask_truncated with sft, which samples no episodes', async () => {
    const sft = 'algorithm:\n  name: sft\n  mask_truncated: true\n';
    expect(await problems(`${sft}`, ['reward.overlong={max_tokens: 100, buffer: 20}'])).toStrictEqual([
      '12:19  algorithm.mask_truncated: does nothing with algorithm sft, which samples no episodes',
      '<overrides>:1:17  reward.overlong: does nothing with algorithm sft, which samples no episodes',
    ]);
  });

  test('rejects dual_clip, trust_region and masked_tokens drop where they do nothing, and accepts them where they act', async () => {
    expect(await problems('algorithm:\n  name: cispo\n  dual_clip: 3\n')).toStrictEqual([
      "12:14  algorithm.dual_clip: does nothing with algorithm cispo: dual-clip bounds PPO's clipped ratio term",
    ]);
    expect(
      await problems('algorithm:\n  name: reinforce\n  mismatch: {mode: tis, trust_region: true}\n'),
    ).toStrictEqual([
      "12:39  algorithm.mismatch.trust_region: does nothing with algorithm reinforce: the trust region is PPO's clip taken against the engine's logprobs",
    ]);
    expect(await problems('algorithm:\n  mismatch: {mode: tis, masked_tokens: drop}\n')).toStrictEqual([
      '11:40  algorithm.mismatch.masked_tokens: does nothing with mode tis, which masks no token; drop goes with mode mask or reject',
    ]);
    expect(
      await problems(
        'algorithm:\n  name: rloo\n  dual_clip: 3\n  mismatch: {mode: reject, masked_tokens: drop, trust_region: true}\n',
      ),
    ).toStrictEqual([]);
    expect(await problems('algorithm:\n  dual_clip: 1\n')).toStrictEqual([
      '11:14  algorithm.dual_clip: must be > 1, got 1',
    ]);
  });

  test('rejects an overlong penalty that starts past what an episode can generate, and a buffer past max_tokens', async () => {
    // agent defaults: 4 turns x 512 new tokens = 2048
    expect(await problems('', ['reward.overlong={max_tokens: 3000, buffer: 952}'])).toStrictEqual([
      '<overrides>:1:30  reward.overlong.max_tokens: the penalty starts at max_tokens - buffer = 2048 generated tokens, but an episode generates at most agent.max_new_tokens x agent.max_turns = 2048: it never applies',
    ]);
    expect(await problems('', ['reward.overlong={max_tokens: 3000, buffer: 953}'])).toStrictEqual([]);
    expect(await problems('', ['reward.overlong={max_tokens: 10, buffer: 20}'])).toStrictEqual([
      '<overrides>:1:42  reward.overlong.buffer: must be at most max_tokens (10), got 20',
    ]);
  });
});
