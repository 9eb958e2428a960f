import { ConfigError, ProviderError } from '../errors/index.js';
import { JudgeSchema, type JudgeConfig } from '../recipe/schema.js';
import { parseComponentOptions } from '../util/component-options.js';
import type { EpisodeOutcome, RewardDefinition, RewardFn } from './types.js';

/**
 * Reward `judge` (what `reward: {judge: {url, model, rubric}}` becomes): an LLM on an
 * OpenAI-compatible `/v1/chat/completions` server grades the final answer against the rubric and
 * ends its reply with `SCORE: <number>`; the reward is that number divided by `max_score`
 * (clamped to [0, 1]), and the reply is kept in the reward info. A reply without a score, an HTTP
 * error or a timeout makes the episode fail with the reason.
 * @throws ConfigError on bad options or when `api_key_env` names an unset variable.
 */
export const judgeReward: RewardDefinition = {
  name: 'judge',
  options: JudgeSchema,
  async create(options): Promise<RewardFn> {
    const judge = parseComponentOptions(JudgeSchema, options, 'reward.judge');
    const ask = judgeChat(judge, 'reward.judge');
    const system = judgeSystemPrompt(judge.rubric, judge.max_score);
    return async (outcome) => {
      const text = await ask(system, judgeUserPrompt(outcome), outcome.env?.signal);
      const raw = parseJudgeScore(text);
      if (raw === undefined) throw new Error(`judge reply has no SCORE: ${JSON.stringify(text.slice(-200))}`);
      return {
        score: Math.min(1, Math.max(0, raw / judge.max_score)),
        info: { judge_score: raw, judge_reply: text.slice(-1000) },
      };
    };
  },
};

/** The judge's instructions: the rubric and the one reply format atk parses. */
export function judgeSystemPrompt(rubric: string, maxScore: number): string {
  return `You grade an AI assistant's answer to a task.\n\nRubric:\n${rubric.trim()}\n\nExplain briefly, then end your reply with one line "SCORE: <number>", a number from 0 to ${maxScore}.`;
}

/** What the judge sees of one episode: the task, the reference answer when there is one, and the final answer. */
export function judgeUserPrompt(outcome: EpisodeOutcome): string {
  const { task } = outcome;
  const reference =
    task.answer === undefined
      ? ''
      : `\n\nReference answer:\n${typeof task.answer === 'string' ? task.answer : JSON.stringify(task.answer)}`;
  return `Task:\n${task.prompt}${reference}\n\nAnswer to grade:\n${outcome.finalText}`;
}

/** The number after the last `SCORE:` in a reply, or the whole reply when it is just a number. */
export function parseJudgeScore(text: string): number | undefined {
  const marked = [...text.matchAll(/score\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)/gi)].at(-1);
  const value = marked ? Number(marked[1]) : /^\s*-?\d+(?:\.\d+)?\s*$/.test(text) ? Number(text) : undefined;
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/** Where and how to reach a judge model: an OpenAI-compatible server and its sampling. */
export type JudgeEndpoint = Pick<
  JudgeConfig,
  'url' | 'model' | 'api_key_env' | 'temperature' | 'max_tokens' | 'timeout_s'
>;

/**
 * A client for one judge: (system prompt, user prompt) -> the reply's text, one POST to
 * `<url>/chat/completions` with the API key from `api_key_env` as a bearer token.
 * @throws ConfigError at `where.api_key_env` when that variable is not set; the client throws
 * ProviderError when the judge is unreachable, times out or answers an HTTP error.
 */
export function judgeChat(
  judge: JudgeEndpoint,
  where: string,
): (system: string, user: string, signal?: AbortSignal) => Promise<string> {
  const apiKey = judge.api_key_env === undefined ? undefined : process.env[judge.api_key_env];
  if (judge.api_key_env !== undefined && !apiKey) {
    throw new ConfigError([
      {
        file: '<recipe>',
        line: 1,
        col: 1,
        path: `${where}.api_key_env`,
        message: `environment variable ${judge.api_key_env} is not set`,
      },
    ]);
  }
  const endpoint = `${judge.url.replace(/\/+$/, '')}/chat/completions`;
  const headers = { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) };
  return async (system, user, signal) => {
    const body = {
      model: judge.model,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ],
      temperature: judge.temperature,
      max_tokens: judge.max_tokens,
    };
    return replyText(await postJson(endpoint, headers, body, judge.timeout_s * 1000, signal));
  };
}

/** One POST; the judge is not retried, so a flaky judge shows up as failed episodes rather than slow steps. */
async function postJson(
  endpoint: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(endpoint, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw new ProviderError(
      timeout.aborted
        ? `judge at ${endpoint} timed out after ${timeoutMs / 1000} s`
        : `judge at ${endpoint} unreachable: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const text = await response.text();
  if (!response.ok) throw new ProviderError(`judge at ${endpoint} answered ${response.status}: ${text.slice(0, 300)}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(`judge at ${endpoint} answered with invalid JSON: ${text.slice(0, 200)}`);
  }
}

function replyText(reply: unknown): string {
  const content = (reply as { choices?: { message?: { content?: unknown } }[] } | null)?.choices?.[0]?.message?.content;
  if (typeof content !== 'string')
    throw new Error(`judge reply has no message content: ${JSON.stringify(reply).slice(0, 200)}`);
  return content;
}
