import { Message, type MessageData } from '@strands-agents/sdk';
import { toChatMessages, toChatTools } from '../agent/chat-messages.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import { auditDrift, type DriftReport } from '../tokens/drift.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { AgentSpec, EpisodeResult } from './episode.js';

/**
 * Drift audit of a finished episode: re-renders its conversation up to the last model message with the
 * chat template (as a text-based pipeline would) and compares that with the exact trajectory.
 */
export function auditEpisodeDrift(
  episode: Pick<EpisodeResult, 'messages' | 'trajectory'>,
  tokenizer: ModelTokenizer,
  spec: Pick<AgentSpec, 'tools' | 'chatTemplateKwargs'>,
): DriftReport {
  return auditRecordedDrift(
    episode,
    tokenizer,
    toChatTools(spec.tools.map((t) => t.toolSpec)),
    spec.chatTemplateKwargs ?? {},
  );
}

/** The same audit for an episode read back from a trajectory file, with the tools in chat-template form. */
export function auditRecordedDrift(
  episode: Pick<EpisodeResult, 'messages' | 'trajectory'>,
  tokenizer: ModelTokenizer,
  tools: readonly ChatTool[],
  chatTemplateKwargs: Readonly<Record<string, unknown>>,
): DriftReport {
  const chat = episodeChatMessages(episode.messages);
  const lastModel = chat.map((m) => m.role).lastIndexOf('assistant');
  return auditDrift({
    tokenizer,
    trajectory: episode.trajectory,
    messages: chat.slice(0, lastModel + 1),
    tools,
    chatTemplateKwargs,
  });
}

/**
 * An episode's recorded messages as chat-template messages: the system prompt, Strands MessageData, and
 * (sft reference episodes) messages already in chat form, which pass through unchanged.
 */
export function episodeChatMessages(messages: readonly unknown[]): ChatMessage[] {
  const chat: ChatMessage[] = [];
  for (const plain of messages) {
    const data = plain as { role: string; content: unknown };
    if (typeof data.content === 'string') chat.push(plain as ChatMessage);
    else if (data.role === 'system')
      chat.push({ role: 'system', content: (data.content as { text?: string }[]).map((b) => b.text ?? '').join('') });
    else chat.push(...toChatMessages(Message.fromJSON(data as MessageData)));
  }
  return chat;
}
