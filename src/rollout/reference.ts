import type { ChatMessage, ChatTool, ModelTokenizer } from '../tokens/index.js';
import { incrementalRenderer, probeTemplate, TokenTrajectory } from '../tokens/index.js';

/**
 * The token trajectory of a reference conversation (a supervised warm start's "perfect agent"),
 * built exactly as an RL episode's would be: the prompt and environment turns through the same
 * incremental renderer, and each assistant turn as the text the template writes for it up to and
 * including the stop token, marked as model tokens (mask 1, logprob 0). Training on it teaches the
 * model the very token layout it will later produce and be scored on.
 * @throws Error when the conversation does not start with non-assistant messages.
 */
export function referenceTrajectory(
  tokenizer: ModelTokenizer,
  messages: readonly ChatMessage[],
  tools: readonly ChatTool[],
  kwargs: Readonly<Record<string, unknown>> = {},
): TokenTrajectory {
  const renderer = incrementalRenderer(tokenizer, kwargs);
  const probe = probeTemplate(tokenizer, kwargs);
  const trajectory = new TokenTrajectory();
  const firstAssistant = messages.findIndex((m) => m.role === 'assistant');
  if (firstAssistant <= 0)
    throw new Error('a reference conversation needs prompt messages before the first assistant turn');
  trajectory.appendEnvironment('prompt', renderer.initial(messages.slice(0, firstAssistant), tools), 0);
  let turn = 0;
  let pending: ChatMessage[] = [];
  let lastModelToken: number | undefined;
  let reply: ChatMessage | undefined;
  for (const message of messages.slice(firstAssistant)) {
    if (message.role !== 'assistant') {
      pending.push(message);
      continue;
    }
    if (pending.length > 0) {
      trajectory.appendEnvironment(
        pending.some((m) => m.role === 'user') ? 'user' : 'tool',
        renderer.continuation(lastModelToken, pending, reply),
        turn,
      );
      pending = [];
    }
    const ids = tokenizer.encode(assistantText(tokenizer, message, probe, kwargs));
    trajectory.appendModel(ids, new Array<number>(ids.length).fill(0), turn, 0, 'stop');
    lastModelToken = ids[ids.length - 1];
    reply = message;
    turn++;
  }
  trajectory.counters.turns = turn;
  return trajectory;
}

/** What the model must generate for an assistant message: the template's rendering of it, ending with the stop token. */
function assistantText(
  tokenizer: ModelTokenizer,
  message: ChatMessage,
  probe: ReturnType<typeof probeTemplate>,
  kwargs: Readonly<Record<string, unknown>>,
): string {
  const head: ChatMessage[] = [
    { role: 'system', content: '__ATK_SYSTEM__' },
    { role: 'user', content: '__ATK_USER__' },
  ];
  const before = tokenizer.renderChat(head, { ...kwargs, addGenerationPrompt: true });
  const full = tokenizer.renderChat([...head, message], kwargs);
  if (!full.startsWith(before) || !full.endsWith(probe.turnCloser)) {
    throw new Error('chat template does not render an assistant turn as generation prompt + content + turn closer');
  }
  const body = full.slice(before.length, full.length - probe.turnCloser.length);
  const stop = probe.stopToken === undefined ? '' : tokenizer.decode([probe.stopToken]);
  return body + stop;
}
