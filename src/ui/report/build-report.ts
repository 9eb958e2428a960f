import type { MetricsLine } from '../../runs/index.js';
import { conversationTurns, type ConversationPart } from '../trajectory/conversation.js';
import type { TrajectoryRecord } from '../trajectory/record.js';
import { overlapSection } from './overlap.js';
import { REPORT_CSS } from './report-css.js';
import type { RunReportData } from './run-data.js';
import { escapeXml as esc, linePlot, type PlotSeries } from './svg-plot.js';

/** The training curves a report draws, in order: metrics.jsonl key and title. */
export const REPORT_CURVES: readonly { readonly key: string; readonly title: string; readonly percent?: boolean }[] = [
  { key: 'reward_mean', title: 'Reward (mean per step)' },
  { key: 'accuracy', title: 'Accuracy (training episodes)', percent: true },
  { key: 'response_tokens_mean', title: 'Response length (generated tokens per episode)' },
  { key: 'train/entropy', title: 'Policy entropy' },
  { key: 'train/kl', title: 'KL to the reference policy' },
  { key: 'train/mismatch_mean', title: 'Train/inference mismatch (mean)' },
];

/** Curves of multi-turn runs, drawn when the run recorded them. */
const CONVERSATION_CURVES: typeof REPORT_CURVES = [
  { key: 'mean_turns', title: 'Model turns per episode' },
  { key: 'user_turns_per_episode', title: 'User turns per episode' },
  { key: 'policy_violations_per_episode', title: 'Policy violations per episode' },
];

const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2'];

/** One self-contained HTML page (inline CSS and SVG, no script, no network) for a run. */
export function buildReportHtml(data: RunReportData): string {
  const title = `${data.name} ${data.version}`;
  return [
    '<!DOCTYPE html>',
    `<html lang="en"><head><meta charset="utf-8"><title>atk report: ${esc(title)}</title><style>${REPORT_CSS}</style></head><body>`,
    `<h1>atk report: ${esc(title)}</h1>`,
    `<p class="meta">${esc(data.dir)} · status ${esc(data.status)} · started ${esc(data.startedAt)}${data.finishedAt ? ` · finished ${esc(data.finishedAt)}` : ''} · ${data.train.length} training steps recorded</p>`,
    '<h2>Training curves</h2>',
    `<div class="plots">${reportCurves(data.train)
      .map((c, i) => curvePlot(data.train, c, COLORS[i % COLORS.length]!))
      .join('')}</div>`,
    '<h2>Generation and training overlap</h2>',
    overlapSection(data.train),
    '<h2>Evaluations</h2>',
    evalSection(data.evals),
    '<h2>Tool use</h2>',
    toolSection(data),
    '<h2>Sample trajectories</h2>',
    data.samples.length
      ? data.samples.map((s) => sampleSection(s.label, s.source, s.record)).join('')
      : '<p>No trajectories recorded.</p>',
    '</body></html>',
    '',
  ].join('\n');
}

/** The fixed curves, and the conversation curves of a multi-turn run (one that recorded user turns). */
function reportCurves(train: readonly MetricsLine[]): typeof REPORT_CURVES {
  const multiTurn = train.some((m) => typeof m.user_turns_per_episode === 'number');
  return multiTurn
    ? [...REPORT_CURVES, ...CONVERSATION_CURVES.filter((c) => train.some((m) => typeof m[c.key] === 'number'))]
    : REPORT_CURVES;
}

function curvePlot(train: readonly MetricsLine[], curve: (typeof REPORT_CURVES)[number], color: string): string {
  const points = train.flatMap((m) =>
    typeof m[curve.key] === 'number' && typeof m.step === 'number' ? [[m.step, m[curve.key] as number] as const] : [],
  );
  const series: PlotSeries[] = [{ name: curve.key, points, color }];
  return `<figure>${linePlot({ title: curve.title, series, xLabel: 'step', ...(curve.percent ? { yFormat: (y: number) => `${Math.round(y * 100)}%` } : {}) })}</figure>`;
}

function evalSection(evals: readonly MetricsLine[]): string {
  if (evals.length === 0) return '<p>No evaluations recorded.</p>';
  const first = evals[0]!;
  const last = evals[evals.length - 1]!;
  const keys = [
    'accuracy',
    'reward_mean',
    ...Object.keys((last.pass_at_k as Record<string, number> | undefined) ?? {}),
    'tool_calls_per_episode',
    'tool_error_rate',
    'mean_turns',
    ...['user_turns_per_episode', 'policy_violations_per_episode'].filter((k) => typeof last[k] === 'number'),
    'mean_tokens',
    'failed_episodes',
  ];
  const value = (line: MetricsLine, key: string): number | undefined => {
    const v = key.startsWith('pass@') ? (line.pass_at_k as Record<string, unknown> | undefined)?.[key] : line[key];
    return typeof v === 'number' ? v : undefined;
  };
  const rows = keys.map((k) => {
    const a = value(first, k);
    const b = value(last, k);
    const delta = a !== undefined && b !== undefined && first !== last ? b - a : undefined;
    return `<tr><th>${esc(k)}</th><td>${fmt(a)}</td><td>${first === last ? '' : fmt(b)}</td><td class="${delta === undefined ? '' : delta >= 0 ? 'up' : 'down'}">${delta === undefined ? '' : `${delta >= 0 ? '+' : ''}${fmt(delta)}`}</td></tr>`;
  });
  const head = `<tr><th></th><th>before (${esc(String(first.label ?? first.step))})</th><th>${first === last ? '' : `after (${esc(String(last.label ?? last.step))})`}</th><th>${first === last ? '' : 'change'}</th></tr>`;
  const plot =
    evals.length > 1
      ? `<figure>${linePlot({ title: 'Eval accuracy', xLabel: 'step', series: [{ name: 'accuracy', color: COLORS[4]!, markers: true, points: evals.flatMap((e) => (typeof e.step === 'number' && typeof e.accuracy === 'number' ? [[e.step, e.accuracy] as const] : [])) }], yFormat: (y) => `${Math.round(y * 100)}%` })}</figure>`
      : '';
  return `<p>${esc(String(first.split ?? ''))} split, ${esc(String(first.tasks ?? '?'))} tasks × ${esc(String(first.samples ?? 1))} samples.</p><table class="figures">${head}${rows.join('')}</table>${plot}`;
}

function toolSection(data: RunReportData): string {
  const t = data.toolUse;
  if (t.episodes === 0) return '<p>No trajectories recorded.</p>';
  const steps = data.toolUseSteps;
  const histogram = Object.entries(t.callHistogram)
    .map(([k, n]) => `<tr><th>${esc(k)} calls</th><td>${n}</td><td>${pct(n / t.episodes)}</td></tr>`)
    .join('');
  const tools =
    t.tools
      .map(
        (x) => `<tr><th>${esc(x.name)}</th><td>${x.calls}</td><td>${pct(x.episodeShare)}</td><td>${x.errors}</td></tr>`,
      )
      .join('') + unknownToolsRow(t) || '<tr><td colspan="4">no tool calls</td></tr>';
  const errors =
    t.errors.map((e) => `<tr><th>${esc(e.kind)}</th><td>${e.count}</td><td>${pct(e.rate)}</td></tr>`).join('') ||
    '<tr><td colspan="3">no tool errors</td></tr>';
  return (
    `<p>${t.episodes} episodes${steps.length ? ` of steps ${steps[0]}..${steps[steps.length - 1]}` : ''}, ${t.toolCalls} tool calls, ${t.callsPerEpisode.toFixed(2)} per episode.</p>` +
    '<div class="tables">' +
    `<table class="figures"><tr><th>calls per episode</th><th>episodes</th><th>share</th></tr>${histogram}</table>` +
    `<table class="figures"><tr><th>tool</th><th>calls</th><th>episodes using it</th><th>errors</th></tr>${tools}</table>` +
    `<table class="figures"><tr><th>error kind</th><th>count</th><th>per call</th></tr>${errors}</table>` +
    '</div>'
  );
}

/** Calls of tools the agent does not have: one row, with the most called names as examples. */
function unknownToolsRow(t: RunReportData['toolUse']): string {
  const u = t.unknownTools;
  if (!u) return '';
  const examples = u.examples.map((e) => `${esc(JSON.stringify(e.name))} ×${e.calls}`).join(', ');
  return `<tr class="unknown-tools"><th>${esc(u.name)} (${u.names} name${u.names === 1 ? '' : 's'})</th><td>${u.calls}</td><td>${pct(u.episodeShare)}</td><td>${u.errors}</td></tr><tr class="examples"><td colspan="4">e.g. ${examples}${u.names > u.examples.length ? ', …' : ''}</td></tr>`;
}

function sampleSection(label: string, source: string, record: TrajectoryRecord): string {
  const parts = Object.entries(record.reward_parts)
    .map(([k, v]) => `${k} ${fmt(v)}`)
    .join(', ');
  const s = record.stats;
  const head = `<h3>${esc(label)}: task ${esc(record.task_id)}, reward ${fmt(record.reward)}${parts ? ` (${esc(parts)})` : ''}, ${record.failed ? 'failed' : record.success ? 'success' : 'no success'}</h3>`;
  const meta = `<p class="meta">${esc(source)} · finish ${esc(record.finish_reason)} · ${s.turns} turns · ${s.toolCalls} tool calls, ${s.toolErrors} errors · ${s.generatedTokens} generated tokens${record.error ? ` · error: ${esc(record.error)}` : ''}</p>`;
  const turns = conversationTurns(record.messages).map(
    (turn) =>
      `<div class="turn ${turn.role}"><div class="role">${turn.role}</div>${turn.parts.map(partHtml).join('')}</div>`,
  );
  return `<section class="sample">${head}${meta}${turns.join('')}</section>`;
}

function partHtml(part: ConversationPart): string {
  switch (part.kind) {
    case 'text':
      return `<pre>${esc(part.text)}</pre>`;
    case 'reasoning':
      return `<pre class="reasoning">${esc(part.text)}</pre>`;
    case 'toolCall':
      return `<pre class="call">→ ${esc(part.name)}(${esc(JSON.stringify(part.input))})</pre>`;
    case 'toolResult':
      return `<pre class="result ${part.status}">← ${esc(part.name)}${part.status === 'error' ? ' error' : ''}: ${esc(part.text)}</pre>`;
  }
}

function fmt(v: number | undefined): string {
  if (v === undefined) return '-';
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}
