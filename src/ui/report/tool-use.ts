import { conversationTurns, toolCallCounts } from '../trajectory/conversation.js';
import type { TrajectoryRecord } from '../trajectory/record.js';

/** How an agent used its tools over a set of episodes. */
export interface ToolUseStats {
  readonly episodes: number;
  readonly toolCalls: number;
  readonly callsPerEpisode: number;
  /** Episodes by number of tool calls: `0`, `1`, `2`, `3`, `4+`. */
  readonly callHistogram: Readonly<Record<string, number>>;
  /** Per tool: calls, the share of episodes that called it at least once, and error results. */
  readonly tools: readonly { readonly name: string; readonly calls: number; readonly episodeShare: number; readonly errors: number }[];
  /** Per error kind: count, and rate per tool call. */
  readonly errors: readonly { readonly kind: string; readonly count: number; readonly rate: number }[];
}

/** Accumulates tool-use figures episode by episode (trajectory files are read one at a time). */
export class ToolUseCounter {
  private episodes = 0;
  private calls = 0;
  private readonly histogram: Record<string, number> = { '0': 0, '1': 0, '2': 0, '3': 0, '4+': 0 };
  private readonly callsByTool = new Map<string, number>();
  private readonly episodesByTool = new Map<string, number>();
  private readonly errorsByTool = new Map<string, number>();
  private readonly errors = new Map<string, number>();

  add(record: TrajectoryRecord): void {
    this.episodes++;
    this.calls += record.stats.toolCalls;
    const bucket = record.stats.toolCalls >= 4 ? '4+' : String(record.stats.toolCalls);
    this.histogram[bucket] = (this.histogram[bucket] ?? 0) + 1;
    const turns = conversationTurns(record.messages);
    for (const turn of turns) {
      for (const part of turn.parts) if (part.kind === 'toolResult' && part.status === 'error') this.errorsByTool.set(part.name, (this.errorsByTool.get(part.name) ?? 0) + 1);
    }
    for (const [name, n] of toolCallCounts(turns)) {
      this.callsByTool.set(name, (this.callsByTool.get(name) ?? 0) + n);
      this.episodesByTool.set(name, (this.episodesByTool.get(name) ?? 0) + 1);
    }
    for (const [kind, n] of Object.entries(record.stats.toolErrorsByKind)) this.errors.set(kind, (this.errors.get(kind) ?? 0) + n);
  }

  stats(): ToolUseStats {
    const perCall = (n: number): number => (this.calls ? n / this.calls : 0);
    return {
      episodes: this.episodes,
      toolCalls: this.calls,
      callsPerEpisode: this.episodes ? this.calls / this.episodes : 0,
      callHistogram: { ...this.histogram },
      tools: [...this.callsByTool].sort((a, b) => b[1] - a[1]).map(([name, calls]) => ({ name, calls, episodeShare: (this.episodesByTool.get(name) ?? 0) / Math.max(1, this.episodes), errors: this.errorsByTool.get(name) ?? 0 })),
      errors: [...this.errors].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]).map(([kind, count]) => ({ kind, count, rate: perCall(count) })),
    };
  }
}
