import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { resolveAlgorithm } from '../recipe/presets.js';
import { runInspectTrajectory } from '../cli/inspect-trajectory.js';
import { AlgorithmSchema, RolloutSchema } from '../recipe/schema.js';
import { createVllmClient } from '../engines/vllm.js';
import { summarize } from '../run/evaluate.js';
import { advantages } from '../run/step-phases.js';
import { trajectoryRecord } from '../run/step-record.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { externalEpisodeResult } from './external-episode.js';
import { GatewayError } from './errors.js';
import { GatewayEpisode } from './gateway-episode.js';
import { parseCompletionRequest } from './openai-request.js';

// A history rewrite end to end without a model: the engine double answers, the gateway episode keeps two
// segments, the trajectory line records both, inspect-trajectory shows why, and training uses both.
let double: EngineDouble;
let tokenizer: ModelTokenizer;

beforeAll(async () => {
  tokenizer = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  const reply = tokenizer.encode('Answer: 4<|im_end|>');
  double = await startEngineDouble({ script: () => ({ tokenIds: reply }) });
});
afterAll(() => double?.close());

describe('history rewrites', () => {
  test('returns two trained segments and an inspect view naming the rewrite', async () => {
    const episode = new GatewayEpisode('e1', {
      engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
      tokenizer,
      parser: hermesParser,
      policyVersion: 0,
      maxTurns: 4,
      maxNewTokens: 16,
      sampling: { temperature: 1, topP: 1, topK: -1 },
    });
    await episode.complete(parseCompletionRequest({ messages: [{ role: 'user', content: 'What is 2 + 2?' }] }));
    // The agent summarises instead of sending its history back.
    await episode.complete(
      parseCompletionRequest({
        messages: [
          { role: 'system', content: 'Earlier: 2 + 2 = 4.' },
          { role: 'user', content: 'And 2 + 2 again?' },
        ],
      }),
    );
    const result = externalEpisodeResult(episode, { timedOut: false, log: 'warming up\n' }, undefined, 5);
    const reason = 'history trimmed or replaced: the request has 2 messages, the recorded conversation 2';
    expect(result.priorSegments?.map((s) => s.endedBecause)).toStrictEqual([reason]);
    const [first, second] = [double.requests[0]!, double.requests[1]!];
    expect(result.priorSegments![0]!.trajectory.ids).toStrictEqual([...first.promptIds, ...first.outputs[0]!]);
    expect(result.trajectory.ids).toStrictEqual([...second.promptIds, ...second.outputs[0]!]);
    expect(result.stats).toMatchObject({
      turns: 2,
      historyRewrites: 1,
      promptTokens: first.promptIds.length + second.promptIds.length,
      generatedTokens: 2 * first.outputs[0]!.length,
    });

    const run = mkdtempSync(join(tmpdir(), 'atk-rewrite-'));
    mkdirSync(join(run, 'trajectories'));
    const rollout = {
      task: { id: 't1', prompt: 'What is 2 + 2?', data: {} },
      group: 0,
      sample: 0,
      policyVersion: 0,
      reward: 1,
      parts: {},
      success: true,
      failed: false,
      episode: result,
    };
    writeFileSync(
      join(run, 'trajectories', 'step-00001.jsonl'),
      `${JSON.stringify(trajectoryRecord(rollout, 1, 0.5))}\n`,
    );
    const view = await runInspectTrajectory({ path: run, episode: 0, model: TINY_TOKENIZER_DIR, drift: true });
    // Evals count rewrites as training steps do; a built-in episode (no count) adds 0 to the mean.
    const builtin = { ...rollout, episode: { ...result, stats: { ...result.stats, historyRewrites: undefined } } };
    expect(summarize([[rollout, builtin]], { label: 'e', split: 'test', samples: 2 })['gateway/history_rewrites']).toBe(
      0.5,
    );
    expect(summarize([[builtin]], { label: 'e', split: 'test', samples: 1 })).not.toHaveProperty(
      'gateway/history_rewrites',
    );
    expect(view).toContain(
      `2 trajectory segments, every one trained with the episode's advantage: 1 → ${reason}, 2 → end`,
    );
    expect(view).toContain(`segment 1 of 2 (then a new segment: ${reason}): 100 environment + 9 generated tokens`);
    expect(view).toContain('agent stderr (end):\n  warming up');

    // Training goes through the loop's own rollout-to-batch step; grpo gives the rewarded episode's segments
    // its advantage (> 0) and an unrewarded episode without a rewrite one sequence (< 0).
    const { priorSegments: _, ...unrewritten } = result;
    const unrewarded = { ...rollout, sample: 1, reward: 0, success: false, episode: unrewritten };
    const recipe = {
      rollout: RolloutSchema.parse({}),
      algorithm: resolveAlgorithm(AlgorithmSchema.parse({ name: 'grpo' })),
    };
    const { batch } = advantages(recipe, [[rollout, unrewarded]], 0);
    const prior = result.priorSegments![0]!.trajectory;
    expect(batch.sequences.map((s) => [s.token_ids, s.loss_mask, (s.advantage ?? 0) > 0])).toStrictEqual([
      [prior.ids, prior.mask(), true],
      [result.trajectory.ids, result.trajectory.mask(), true],
      [result.trajectory.ids, result.trajectory.mask(), false],
    ]);
  });
});

describe('GatewayEpisode', () => {
  test('rejects messages the chat template refuses to render with a 400 naming the template error', async () => {
    // A template that, like many, refuses some conversations (here: tool messages).
    const chatTemplate =
      "{%- for m in messages %}{%- if m.role == 'tool' %}{{ raise_exception('tool messages are not supported') }}{%- endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}";
    const strict = await loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplate });
    const episode = new GatewayEpisode('e2', {
      engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
      tokenizer: strict,
      parser: hermesParser,
      policyVersion: 0,
      maxTurns: 4,
      maxNewTokens: 16,
      sampling: { temperature: 1, topP: 1, topK: -1 },
    });
    const error = (await episode
      .complete(
        parseCompletionRequest({
          messages: [
            { role: 'user', content: 'Hi' },
            { role: 'tool', content: '5', tool_call_id: 'c1' },
          ],
        }),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      )) as GatewayError;
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.toBody()).toStrictEqual({
      error: {
        message: expect.stringMatching(
          /^the model's chat template cannot render these messages: .*tool messages are not supported/,
        ),
        type: 'invalid_request_error',
        param: 'messages',
        code: 'unrenderable_messages',
      },
    });
    expect([episode.modelCalls, episode.segments.length]).toStrictEqual([0, 0]);
  });
});
