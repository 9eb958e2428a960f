import { Message, type MessageData } from '@strands-agents/sdk';
import { toChatMessages, toChatTools } from '../agent/chat-messages.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import { auditDrift, type DriftReport } from '../tokens/drift.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { AgentSpec, EpisodeResult } from './episode.js';

/**
 * Drift audit of a finished episode: re-renders its conversation up to the last model message with the
 * chat template (as a text-based pipeline would) and compares that with the exact trajectory.
 */
export function auditEpisodeDrift(episode: EpisodeResult, tokenizer: ModelTokenizer, spec: Pick<AgentSpec, 'tools' | 'chatTemplateKwargs'>): DriftReport {
  const chat: ChatMessage[] = [];
  for (const plain of episode.messages) {
    const data = plain as { role: string; content: { text?: string }[] };
    if (data.role === 'system') chat.push({ role: 'system', content: data.content.map((b) => b.text ?? '').join('') });
    else chat.push(...toChatMessages(Message.fromJSON(data as MessageData)));
  }
  const lastModel = chat.map((m) => m.role).lastIndexOf('assistant');
  return auditDrift({
    tokenizer,
    trajectory: episode.trajectory,
    messages: chat.slice(0, lastModel + 1),
    tools: toChatTools(spec.tools.map((t) => t.toolSpec)),
    ...(spec.chatTemplateKwargs ? { chatTemplateKwargs: spec.chatTemplateKwargs } : {}),
  });
}
