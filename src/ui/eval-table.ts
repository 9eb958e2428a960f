import type { EvalSummary } from '../run/events.js';
import { renderTable, type TableStyle } from './table.js';

/** The figures `atk eval` shows, read off a summary: (table label, value, the key `--metric` names it by). */
export function evalFigures(summary: EvalSummary): [label: string, value: number, key: string][] {
  return [
    ['accuracy (mean@k)', summary.accuracy, 'accuracy'],
    ['reward', summary.reward_mean, 'reward'],
    ...Object.entries(summary.pass_at_k).map(([k, v]): [string, number, string] => [k, v, k]),
    ['tool calls / episode', summary.tool_calls_per_episode, 'tool_calls'],
    ['tool error rate', summary.tool_error_rate, 'tool_error_rate'],
    ['turns', summary.mean_turns, 'turns'],
    ...optionalFigure('user turns / episode', summary.user_turns_per_episode, 'user_turns'),
    ...optionalFigure('policy violations / episode', summary.policy_violations_per_episode, 'policy_violations'),
    ['generated tokens', summary.mean_tokens, 'tokens'],
    ['failed episodes', summary.failed_episodes, 'failed_episodes'],
    ...failedKinds(summary).map(([kind, n]): [string, number, string] => [`  failed: ${kind}`, n, `failed/${kind}`]),
    ...(summary['gateway/history_rewrites'] === undefined
      ? []
      : [
          ['history rewrites / episode', summary['gateway/history_rewrites'], 'history_rewrites'] as [
            string,
            number,
            string,
          ],
        ]),
  ];
}

function optionalFigure(label: string, value: number | undefined, key: string): [string, number, string][] {
  return value === undefined ? [] : [[label, value, key]];
}

/** The eval's figures as a table; with a baseline, its figures and the difference beside them. */
export function evalTable(summary: EvalSummary, baseline: EvalSummary | undefined, style: TableStyle = {}): string {
  const base = new Map(baseline ? evalFigures(baseline).map(([label, value]) => [label, value]) : []);
  const head = baseline ? ['', summary.label, `baseline ${baseline.label}`, 'difference'] : ['', summary.label];
  const rows = evalFigures(summary).map(([name, value]) => {
    if (!baseline) return [name, fmt(value)];
    const b = base.get(name);
    return [
      name,
      fmt(value),
      b === undefined ? '-' : fmt(b),
      b === undefined ? '-' : `${value - b >= 0 ? '+' : ''}${fmt(value - b)}`,
    ];
  });
  return renderTable(head, rows, style);
}

/** The summary's `failed/<kind>` counts as (kind, count), in a stable order. */
function failedKinds(summary: EvalSummary): [kind: string, count: number][] {
  return Object.entries(summary)
    .filter((e): e is [`failed/${string}`, number] => e[0].startsWith('failed/') && typeof e[1] === 'number')
    .map(([key, n]): [string, number] => [key.slice('failed/'.length), n])
    .sort(([a], [b]) => a.localeCompare(b));
}

function fmt(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}
