import { z } from 'zod';
import { transcriptOf, type NlJudge, type NlVerdict } from '../domains/tau2/index.js';
import { JudgeSchema } from '../recipe/schema.js';
import { judgeChat } from './judge.js';

/**
 * `reward.options.judge` of the `tau2` reward: the LLM that grades a task's NL assertions, on an
 * OpenAI-compatible chat server (the `judge` reward's endpoint keys, without a rubric: the task's
 * assertions are the rubric). Longer replies than the `judge` reward's: one reasoning per assertion.
 */
export const Tau2JudgeSchema = JudgeSchema.omit({ rubric: true, max_score: true }).extend({
  max_tokens: z
    .number()
    .int()
    .positive()
    .default(1024)
    .describe("Most tokens in the judge's reply (a short reasoning per assertion)."),
});
export type Tau2JudgeConfig = z.infer<typeof Tau2JudgeSchema>;

/**
 * The judge of `options.judge` as a factory of per-episode {@link NlJudge}s, or undefined when the
 * recipe sets none. Graded as tau2-bench's NLAssertionsEvaluator does: one request with the
 * conversation and every assertion, a JSON reply `{"results": [{expectedOutcome, reasoning,
 * metExpectation}]}`, and the part is met only when every assertion is.
 * @throws ConfigError at `where` on an unset `api_key_env`.
 */
export function tau2NlJudge(
  judge: Tau2JudgeConfig | undefined,
  where: string,
): ((messages: readonly unknown[], signal?: AbortSignal) => NlJudge) | undefined {
  if (judge === undefined) return undefined;
  const ask = judgeChat(judge, where);
  return (messages, signal) => async (assertions) =>
    parseNlVerdicts(
      await ask(NL_SYSTEM_PROMPT, nlUserPrompt(judgeConversation(messages), assertions), signal),
      assertions,
    );
}

const NL_SYSTEM_PROMPT = `TASK
- You will be given a list of expected outcomes and a conversation between a customer-service agent and a customer, collected during a test run.
- Decide, for each expected outcome separately, whether the agent satisfies it.

FORMAT
- Reply with one JSON object and nothing else: {"results": [{"expectedOutcome": "<the expected outcome, repeated>", "reasoning": "<a short explanation>", "metExpectation": true or false}]}
- One entry per expected outcome, in the order given.`;

function nlUserPrompt(conversation: string, assertions: readonly string[]): string {
  return `conversation:\n${conversation}\n\nexpectedOutcomes:\n${assertions.map((a, i) => `${i + 1}. ${a}`).join('\n')}`;
}

/**
 * The conversation as the judge reads it, one `role: text` line per message as in the reference:
 * agent and user text (tool-call markup and thinking removed) and tool results as `tool:` lines.
 */
export function judgeConversation(messages: readonly unknown[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    const { role, content } = (message ?? {}) as { role?: unknown; content?: unknown };
    if (role === 'tool' && typeof content === 'string') lines.push(`tool: ${content}`);
    for (const block of Array.isArray(content) ? (content as { toolResult?: { content?: unknown } }[]) : []) {
      const parts = block?.toolResult?.content;
      if (Array.isArray(parts))
        lines.push(
          `tool: ${(parts as { text?: unknown; json?: unknown }[]).map((p) => (typeof p.text === 'string' ? p.text : JSON.stringify(p.json))).join('')}`,
        );
    }
    for (const turn of transcriptOf([message])) if (turn.text.length > 0) lines.push(`${turn.role}: ${turn.text}`);
  }
  return lines.join('\n');
}

/**
 * The verdicts in a judge's reply, one per assertion in order (the JSON object may be wrapped in a
 * code fence or prose). @throws Error when the reply has no such object or grades a different
 * number of assertions than were asked: the episode then fails with the reply quoted.
 */
export function parseNlVerdicts(reply: string, assertions: readonly string[]): NlVerdict[] {
  const start = reply.indexOf('{');
  const end = reply.lastIndexOf('}');
  let results: unknown;
  try {
    results = (JSON.parse(reply.slice(start, end + 1)) as { results?: unknown }).results;
  } catch {
    results = undefined;
  }
  if (start < 0 || !Array.isArray(results))
    throw new Error(`NL_ASSERTION judge reply is not {"results": [...]}: ${JSON.stringify(reply.slice(0, 200))}`);
  if (results.length !== assertions.length)
    throw new Error(
      `NL_ASSERTION judge graded ${results.length} of ${assertions.length} assertions: ${JSON.stringify(reply.slice(0, 200))}`,
    );
  return assertions.map((assertion, i) => {
    const { metExpectation, reasoning } = (results[i] ?? {}) as { metExpectation?: unknown; reasoning?: unknown };
    return {
      assertion,
      met: metExpectation === true || metExpectation === 'true',
      reasoning: typeof reasoning === 'string' ? reasoning : '',
    };
  });
}
