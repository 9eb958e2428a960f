import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { toChatTools } from '../agent/chat-messages.js';
import { createVllmClient } from '../engines/vllm.js';
import { mathAnswerReward } from '../rewards/math-answer.js';
import { runEpisode, type AgentSpec } from '../rollout/episode.js';
import { referenceTrajectory } from '../rollout/reference.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/index.js';
import { calculatorTool } from '../tools/calculator.js';
import { projectRoot } from '../util/paths.js';
import { ArithOptions, generateArith, type ArithData } from './arith.js';

// An RL episode of the tiny model on arith, with the real calculator, must produce exactly the
// tokens its warm-start transcript trains on; otherwise SFT would teach a layout RL never sees.
const calculator = calculatorTool();
const spec: AgentSpec = {
  tools: [calculator],
  maxTurns: 4,
  maxNewTokens: 64,
  sampling: { temperature: 1, topP: 1, topK: -1 },
  toolCallFormat: 'hermes',
};
let tokenizer: ModelTokenizer;
let double: EngineDouble | undefined;

beforeAll(async () => {
  tokenizer = await loadModelTokenizer(join(projectRoot(), 'models', 'tiny-arith'));
});
afterEach(() => double?.close());

/** An engine that answers the n-th request with the n-th model turn given. */
async function replaying(turns: readonly number[][]): Promise<EngineDouble> {
  double = await startEngineDouble({
    script: () => ({ tokenIds: turns[Math.min(double!.requests.length - 1, turns.length - 1)]! }),
  });
  return double;
}

describe('arith episodes on models/tiny-arith', () => {
  test('returns the reference trajectory token for token when the model replays it, scored 1 by math_answer', async () => {
    const reward = await mathAnswerReward.create({}, { recipeDir: '.', warn: () => {} });
    for (const task of generateArith(
      'test',
      ArithOptions.parse({ levels: ['add', 'sub', 'mul', 'word'], test_size: 4 }),
    )) {
      const reference = referenceTrajectory(
        tokenizer,
        (task.data as ArithData).reference,
        toChatTools([calculator.toolSpec]),
      );
      const modelTurns = reference.segments
        .filter((s) => s.source === 'model')
        .map((s) => reference.ids.slice(s.start, s.start + s.length));
      const d = await replaying(modelTurns);
      const result = await runEpisode({
        task,
        spec,
        engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
        tokenizer,
        policyVersion: 0,
        timeoutMs: 10_000,
      });
      expect(result.trajectory.ids).toStrictEqual(reference.ids);
      expect(result.trajectory.mask()).toStrictEqual(reference.mask());
      expect([result.finishReason, result.finalText, result.toolCalls]).toStrictEqual([
        'endTurn',
        `Answer: ${task.answer}`,
        [
          {
            name: 'calculator',
            input: { expression: (task.data as ArithData).expression },
            status: 'success',
            output: String(task.answer),
          },
        ],
      ]);
      const env = { episodeId: 'e', task, state: new Map(), signal: new AbortController().signal };
      expect(
        await reward({
          task,
          finalText: result.finalText,
          messages: result.messages,
          toolCalls: result.toolCalls,
          finishReason: result.finishReason,
          env,
        }),
      ).toMatchObject({ score: 1 });
      await d.close();
      double = undefined;
    }
  });

  test('returns the calculator error to the model as environment tokens for a bad expression', async () => {
    const [task] = generateArith('test', ArithOptions.parse({ test_size: 1 }));
    const d = await replaying([
      tokenizer.encode(
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12 +"}}\n</tool_call><|im_end|>',
      ),
      tokenizer.encode('Answer: 0<|im_end|>'),
    ]);
    const result = await runEpisode({
      task: task!,
      spec,
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer,
      policyVersion: 0,
      timeoutMs: 10_000,
    });
    expect(result.toolCalls).toStrictEqual([
      {
        name: 'calculator',
        input: { expression: '12 +' },
        status: 'error',
        output: "Error: expected a number or '(' at position 5, found end of expression",
      },
    ]);
    expect(tokenizer.decode(result.trajectory.ids)).toContain(
      "<tool_response>\nError: expected a number or '(' at position 5, found end of expression\n</tool_response>",
    );
  });
});
