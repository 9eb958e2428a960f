import { conversationTurns } from '../trajectory/conversation.js';
import type { TrajectoryRecord } from '../trajectory/record.js';

/** One tool's figures over a set of episodes. */
export interface ToolFigures {
  readonly name: string;
  readonly calls: number;
  /** Share of episodes that called it at least once. */
  readonly episodeShare: number;
  /** Error results. */
  readonly errors: number;
}

/**
 * Calls naming a tool the agent does not have (invented names, garbled markup), as one row: a small
 * model can invent dozens of one-call names, which as rows of their own would bury the real tools.
 */
export interface UnknownToolFigures extends ToolFigures {
  /** How many different names were called. */
  readonly names: number;
  /** The most called names, with their calls. */
  readonly examples: readonly { readonly name: string; readonly calls: number }[];
}

/** How an agent used its tools over a set of episodes. */
export interface ToolUseStats {
  readonly episodes: number;
  readonly toolCalls: number;
  readonly callsPerEpisode: number;
  /** Episodes by number of tool calls: `0`, `1`, `2`, `3`, `4+`. */
  readonly callHistogram: Readonly<Record<string, number>>;
  /** The agent's own tools, most called first. */
  readonly tools: readonly ToolFigures[];
  /** Calls of tools the agent does not have, grouped; null when there were none. */
  readonly unknownTools: UnknownToolFigures | null;
  /** Per error kind: count, and rate per tool call. */
  readonly errors: readonly { readonly kind: string; readonly count: number; readonly rate: number }[];
}

/** How many invented names the unknown-tools row shows. */
const UNKNOWN_EXAMPLES = 5;
/** The guard's message for a call of a tool the agent does not have (src/agent/tool-call-guard.ts). */
const UNKNOWN_TOOL = /^(?:Error: )?unknown tool '[\s\S]*'; available tools: (.*)$/;

/**
 * Accumulates tool-use figures episode by episode (trajectory files are read one at a time). The
 * agent's tools are the names its episodes' stats count per tool (they count only the agent's own)
 * and the names an "unknown tool" error result lists as available; any other name called is not the
 * agent's. Episodes that recorded neither (sft references) count every name as the agent's.
 */
export class ToolUseCounter {
  private episodes = 0;
  private calls = 0;
  private readonly histogram: Record<string, number> = { '0': 0, '1': 0, '2': 0, '3': 0, '4+': 0 };
  private readonly callsByTool = new Map<string, number>();
  private readonly episodesByTool = new Map<string, number>();
  private readonly errorsByTool = new Map<string, number>();
  private readonly errors = new Map<string, number>();
  private readonly agentTools = new Set<string>();
  /** Per episode, the names it called, to count episodes that called any unknown name once. */
  private readonly namesPerEpisode: Set<string>[] = [];

  add(record: TrajectoryRecord): void {
    this.episodes++;
    this.calls += record.stats.toolCalls;
    const bucket = record.stats.toolCalls >= 4 ? '4+' : String(record.stats.toolCalls);
    this.histogram[bucket] = (this.histogram[bucket] ?? 0) + 1;
    for (const name of Object.keys(record.stats.toolCallsByTool)) this.agentTools.add(name);
    const names = new Set<string>();
    for (const turn of conversationTurns(record.messages)) {
      for (const part of turn.parts) {
        if (part.kind === 'toolCall') {
          names.add(part.name);
          this.callsByTool.set(part.name, (this.callsByTool.get(part.name) ?? 0) + 1);
        } else if (part.kind === 'toolResult' && part.status === 'error') {
          this.errorsByTool.set(part.name, (this.errorsByTool.get(part.name) ?? 0) + 1);
          const available = UNKNOWN_TOOL.exec(part.text)?.[1];
          if (available !== undefined && available !== '(none)')
            for (const n of available.split(', ')) this.agentTools.add(n);
        }
      }
    }
    for (const name of names) this.episodesByTool.set(name, (this.episodesByTool.get(name) ?? 0) + 1);
    this.namesPerEpisode.push(names);
    for (const [kind, n] of Object.entries(record.stats.toolErrorsByKind))
      this.errors.set(kind, (this.errors.get(kind) ?? 0) + n);
  }

  stats(): ToolUseStats {
    const perCall = (n: number): number => (this.calls ? n / this.calls : 0);
    const share = (n: number): number => n / Math.max(1, this.episodes);
    const isAgents = (name: string): boolean => this.agentTools.size === 0 || this.agentTools.has(name);
    const figures = [...this.callsByTool]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([name, calls]) => ({
        name,
        calls,
        episodeShare: share(this.episodesByTool.get(name) ?? 0),
        errors: this.errorsByTool.get(name) ?? 0,
      }));
    const unknown = figures.filter((f) => !isAgents(f.name));
    return {
      episodes: this.episodes,
      toolCalls: this.calls,
      callsPerEpisode: this.episodes ? this.calls / this.episodes : 0,
      callHistogram: { ...this.histogram },
      tools: figures.filter((f) => isAgents(f.name)),
      unknownTools: unknown.length
        ? {
            name: 'tools the agent does not have',
            calls: unknown.reduce((sum, f) => sum + f.calls, 0),
            episodeShare: share(this.namesPerEpisode.filter((names) => [...names].some((n) => !isAgents(n))).length),
            errors: unknown.reduce((sum, f) => sum + f.errors, 0),
            names: unknown.length,
            examples: unknown.slice(0, UNKNOWN_EXAMPLES).map(({ name, calls }) => ({ name, calls })),
          }
        : null,
      errors: [...this.errors]
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([kind, count]) => ({ kind, count, rate: perCall(count) })),
    };
  }
}
