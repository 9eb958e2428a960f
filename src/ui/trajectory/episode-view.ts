import type { Painter } from '../ansi.js';
import { conversationTurns, type ConversationPart, type ConversationTurn } from './conversation.js';
import type { TrajectoryRecord } from './record.js';

/** Where an episode sits in its file, for the header line. */
export interface EpisodePosition {
  readonly index: number;
  readonly count: number;
}

/** Header, reward and per-episode stats of one episode, as terminal lines. */
export function episodeHeader(record: TrajectoryRecord, at: EpisodePosition, paint: Painter): string[] {
  const s = record.stats;
  const parts = Object.entries(record.reward_parts).map(([k, v]) => `${k} ${fmt(v)}`);
  const outcome = record.failed
    ? paint('failed', 'red', 'bold')
    : record.success
      ? paint('success', 'green', 'bold')
      : paint('no success', 'yellow', 'bold');
  const errorKinds = Object.entries(s.toolErrorsByKind)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  const lines = [
    paint(`episode ${at.index} of ${at.count}`, 'bold') +
      `  step ${record.step}  task ${record.task_id}  group ${record.group} sample ${record.sample}  policy v${record.policy_version}`,
    `reward ${paint(fmt(record.reward), 'bold')}${parts.length ? ` (${parts.join(', ')})` : ''}  ${outcome}` +
      (record.advantage === null
        ? ''
        : `  advantage ${record.advantage >= 0 ? '+' : ''}${record.advantage.toFixed(3)}`),
    `finish ${record.finish_reason}${s.truncated ? ' (truncated)' : ''}  turns ${s.turns}  tool calls ${s.toolCalls}  tool errors ${s.toolErrors}` +
      (errorKinds.length ? ` (${errorKinds.join(', ')})` : ''),
    `tokens ${s.promptTokens} environment + ${s.generatedTokens} generated  time ${(s.wallMs / 1000).toFixed(2)} s (engine ${(s.engineMs / 1000).toFixed(2)} s)`,
  ];
  if (record.error || record.error_kind)
    lines.push(
      paint(`error${record.error_kind ? ` (failed/${record.error_kind})` : ''}: ${record.error ?? ''}`, 'red'),
    );
  if (record.prior_segments?.length)
    lines.push(
      paint(
        `${record.prior_segments.length + 1} trajectory segments, every one trained with the episode's advantage: ${[...record.prior_segments.map((p) => p.ended_because), 'end'].map((r, i) => `${i + 1} → ${r}`).join(', ')}`,
        'yellow',
      ),
    );
  if (record.agent_log)
    lines.push(
      paint('agent stderr (end):', 'dim'),
      ...record.agent_log
        .split('\n')
        .slice(-10)
        .map((l) => paint(`  ${l}`, 'dim')),
    );
  if (record.reward_info && Object.keys(record.reward_info).length)
    lines.push(`reward info ${JSON.stringify(record.reward_info)}`);
  return lines;
}

/** The conversation as terminal lines: one header per message, tool calls with their arguments, tool results. */
export function conversationLines(messages: readonly unknown[], paint: Painter): string[] {
  return conversationTurns(messages).flatMap((turn) => [
    turnHeader(turn, paint),
    ...turn.parts.flatMap((part) => partLines(part, paint)),
  ]);
}

/** One line per episode of a file: the listing shown when no episode is selected. */
export function episodeListing(records: readonly TrajectoryRecord[], paint: Painter): string[] {
  const width = String(records.length - 1).length;
  return records.map((r, i) => {
    const outcome = r.failed
      ? paint('failed ', 'red')
      : r.success
        ? paint('ok     ', 'green')
        : paint('no     ', 'yellow');
    return (
      `${String(i).padStart(width)}  ${outcome} reward ${fmt(r.reward).padStart(7)}  turns ${String(r.stats.turns).padStart(2)}  tools ${String(r.stats.toolCalls).padStart(2)}` +
      `  err ${String(r.stats.toolErrors).padStart(2)}  ${r.finish_reason.padEnd(10)} ${r.task_id}` +
      (r.failed ? paint(`  failed/${r.error_kind ?? 'unknown'}`, 'red') : '')
    );
  });
}

/** `failed/<kind>`: a file's failed episodes by the layer that failed, as the step and eval metrics count them. */
export function failuresByKind(records: readonly TrajectoryRecord[]): Record<`failed/${string}`, number> {
  const counts: Record<`failed/${string}`, number> = {};
  for (const r of records.filter((x) => x.failed)) {
    const key = `failed/${r.error_kind ?? 'unknown'}` as const;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

function turnHeader(turn: ConversationTurn, paint: Painter): string {
  // Strands records tool results as a user message of toolResult blocks; show it as the tool's turn.
  const results = turn.parts.flatMap((p) => (p.kind === 'toolResult' ? [p.name || 'result'] : []));
  const isTool = turn.role === 'tool' || (results.length > 0 && results.length === turn.parts.length);
  const label = isTool ? `tool ${[...new Set(results)].join(', ')}` : turn.role;
  const style = turn.role === 'assistant' ? 'cyan' : turn.role === 'system' ? 'magenta' : isTool ? 'yellow' : 'blue';
  return paint(`── ${label} ──`, style, 'bold');
}

function partLines(part: ConversationPart, paint: Painter): string[] {
  switch (part.kind) {
    case 'text':
      return part.text.split('\n');
    case 'reasoning':
      return part.text.split('\n').map((l) => paint(`(thinking) ${l}`, 'dim', 'italic'));
    case 'toolCall':
      return [paint(`→ ${part.name}(${JSON.stringify(part.input)})`, 'cyan')];
    case 'toolResult': {
      const head = part.name
        ? `← ${part.name}${part.status === 'error' ? ' error' : ''}:`
        : `←${part.status === 'error' ? ' error' : ''}:`;
      return [
        paint(head, part.status === 'error' ? 'red' : 'yellow'),
        ...part.text.split('\n').map((l) => (part.status === 'error' ? paint(l, 'red') : l)),
      ];
    }
  }
}

function fmt(x: number): string {
  return Number.isInteger(x) ? x.toFixed(1) : x.toFixed(3);
}
