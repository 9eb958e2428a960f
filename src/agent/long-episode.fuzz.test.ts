import fc from 'fast-check';
import { beforeAll, describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import { incrementalRenderer, type IncrementalRenderer } from '../tokens/incremental-render.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { DROPPED_TOOL_RESULT, planPrompt, slidingWindow } from './long-episode.js';

// Property-based fuzzing of the long-episode rewrite path with Qwen3's real template: random
// conversations and budgets through the sliding window and the reasoning-strip planner. `npm test`
// runs a fixed seed and few runs; `npm run fuzz` many more (ATK_FUZZ_RUNS, ATK_FUZZ_SEED).
const RUNS = Number(process.env.ATK_FUZZ_RUNS ?? 0);
const SEED = Number(process.env.ATK_FUZZ_SEED ?? 31);
const settings = (normalRuns: number): fc.Parameters<unknown> => ({
  seed: SEED,
  numRuns: RUNS > 0 ? RUNS : normalRuns,
  endOnFailure: true,
});

const tools: ChatTool[] = [
  {
    type: 'function',
    function: {
      name: 'lookup',
      description: 'Look a thing up',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
    },
  },
];

/** Text without the template's own markers (a model's text holding them is a different, tested path). */
const text = fc.string({ maxLength: 40 }).map((s) => s.replace(/[<>]/g, ''));
/** One turn of a conversation: a reply (reasoning, text, maybe a call) and what follows it. */
const turn = fc.record({
  reasoning: text,
  content: text,
  call: fc.option(text, { nil: undefined }),
  result: text,
  user: fc.option(text, { nil: undefined }),
});
type Turn = typeof turn extends fc.Arbitrary<infer T> ? T : never;

/** The messages of one turn: the reply, its tool result when it called, a user message when one follows. */
function turnMessages(t: Turn, i: number): ChatMessage[] {
  const id = `call_${i}`;
  const reply: ChatMessage = {
    role: 'assistant',
    content: t.content,
    reasoning_content: t.reasoning,
    ...(t.call === undefined
      ? {}
      : { tool_calls: [{ id, type: 'function', function: { name: 'lookup', arguments: { q: t.call } } }] }),
  } as ChatMessage;
  return [
    reply,
    ...(t.call === undefined ? [] : [{ role: 'tool', content: t.result, tool_call_id: id } as ChatMessage]),
    { role: 'user', content: t.user ?? 'go on' },
  ];
}

const head = (task: string): ChatMessage[] => [
  { role: 'system', content: 'You help.' },
  { role: 'user', content: task },
];

let qwen: ModelTokenizer;
let renderer: IncrementalRenderer;
beforeAll(async () => {
  qwen = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
  renderer = incrementalRenderer(qwen, {});
});

describe('long-episode rewrite path (fuzz)', () => {
  test('the sliding window never throws, keeps the head and a suffix of the turns, and renders what it keeps', () => {
    fc.assert(
      fc.property(
        text,
        fc.array(turn, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom('turns' as const, 'tool_results' as const),
        (task, turns, budget, keep, drop) => {
          const history = [...head(task), ...turns.flatMap(turnMessages)];
          const render = (messages: readonly ChatMessage[]) => renderer.initial(messages, tools);
          const windowed = slidingWindow(
            history,
            { strategy: 'sliding_window', budgetTokens: budget, keepLastTurns: keep, drop },
            render,
          );
          expect(windowed.ids).toStrictEqual(render(windowed.messages));
          expect(windowed.messages.slice(0, 2)).toStrictEqual(head(task));
          // What it keeps is the end of the conversation, some tool results blanked; with what it
          // dropped (blanked results as they were) it accounts for every message.
          const kept = windowed.messages.slice(2);
          const tail = history.slice(history.length - kept.length);
          expect(kept.map((m, i) => (m.content === DROPPED_TOOL_RESULT ? tail[i]!.role : m))).toStrictEqual(
            tail.map((m, i) => (kept[i]!.content === DROPPED_TOOL_RESULT ? m.role : m)),
          );
          const blanked = kept.filter((m) => m.role === 'tool' && m.content === DROPPED_TOOL_RESULT).length;
          expect(windowed.dropped.length).toBe(history.length - 2 - kept.length + blanked);
          // It ends with the last turn whole, whatever the budget.
          expect(kept.slice(-turnMessages(turns.at(-1)!, 0).length).map((m) => m.role)).toStrictEqual(
            turnMessages(turns.at(-1)!, 0).map((m) => m.role),
          );
        },
      ),
      settings(25),
    );
  });

  test('with strip, every segment is the template rendering of the conversation, extended or rewritten', () => {
    fc.assert(
      fc.property(text, fc.array(turn, { minLength: 1, maxLength: 5 }), (task, turns) => {
        const history = head(task);
        let segment = renderer.initial(history, tools);
        const segments: number[][] = [];
        for (const [i, t] of turns.entries()) {
          const [reply, ...added] = turnMessages(t, i);
          // The model's tokens: the template's rendering of the reply in progress, as generated.
          const before = qwen.renderChat(history, { tools, addGenerationPrompt: true });
          const after = qwen.renderChat([...history, reply!], { tools, addGenerationPrompt: false });
          segment = [...segment, ...qwen.encode(after.slice(before.length).trimEnd())];
          history.push(reply!, ...added);
          const plan = planPrompt({
            tokenizer: qwen,
            renderer,
            kwargs: {},
            reasoningHistory: 'strip',
            segment,
            history,
            added,
            tools,
          });
          if (plan.kind === 'rewrite') {
            expect(plan.reason).toBe('reasoning_history');
            segments.push(segment);
            segment = [...plan.ids];
          } else segment = [...segment, ...plan.ids];
          // Whichever it chose, the prompt the model now sees is the template's own rendering.
          expect(qwen.decode(segment)).toBe(qwen.renderChat(history, { tools, addGenerationPrompt: true }));
        }
        // A new user message drops earlier reasoning in Qwen3's template: at most one new segment per turn.
        expect(segments.length).toBeLessThanOrEqual(turns.length);
      }),
      settings(15),
    );
  });
});
