import type { EpisodeOutcome } from '../rewards/types.js';

/** A finished episode for reward tests: one calculator call, then `finalText`. */
export function episodeOutcome(finalText: string, answer: unknown = 42): EpisodeOutcome {
  const task = { id: 'row-1', prompt: 'What is 6*7?', answer, data: { level: 'easy' } };
  return {
    task,
    finalText,
    messages: [
      { role: 'user', content: [{ text: task.prompt }] },
      { role: 'assistant', content: [{ text: finalText }] },
    ],
    toolCalls: [{ name: 'calculator', input: { expression: '6*7' }, status: 'success', output: '42' }],
    finishReason: 'endTurn',
    env: { episodeId: '0-0', task, state: new Map(), signal: new AbortController().signal },
  };
}
