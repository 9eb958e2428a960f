/**
 * Curves of one or several runs overlaid: reward and its parts, accuracy, evals, loss, entropy, KL,
 * mismatch, staleness, tool calls and errors per tool, step-time breakdown. uPlot draws them: drag
 * to zoom, double-click to reset, hover for exact values (cursors are synced across charts).
 */
import uPlot from 'uplot';
import type { MetricsAnswer, SourceInfo } from '../src/view/api-types.js';
import { api, link, setParams } from './api.js';
import { tickLabels, valueLabel } from './axis-labels.js';
import { fmt, h } from './dom.js';
import { smooth } from './smoothing.js';
import type { View } from './view.js';

/** Each chart: a title and which figures of metrics.jsonl it draws. */
const CHARTS: readonly { readonly title: string; readonly match: (key: string) => boolean }[] = [
  { title: 'Reward (mean, and each part)', match: (k) => k === 'reward_mean' || k.startsWith('reward/') },
  { title: 'Accuracy (training episodes)', match: (k) => k === 'accuracy' },
  { title: 'Loss', match: (k) => k === 'train/loss' },
  { title: 'Policy entropy', match: (k) => k === 'train/entropy' },
  { title: 'KL to the reference', match: (k) => k === 'train/kl' || k === 'train/kl_mean' },
  { title: 'Train/inference mismatch', match: (k) => k.startsWith('train/mismatch') },
  { title: 'Staleness (policy versions)', match: (k) => k.startsWith('staleness') },
  {
    title: 'Data per step (dynamic sampling: groups sampled, kept, rounds; curriculum: tasks skipped)',
    match: (k) => k.startsWith('dynamic_sampling/') || k.startsWith('curriculum/'),
  },
  {
    title: 'Tool calls per episode (all, and per tool)',
    match: (k) => k === 'tool_calls_per_episode' || k.startsWith('tool_calls/'),
  },
  {
    title: 'Tool errors (rate per call, and per tool per episode)',
    match: (k) => k === 'tool_error_rate' || k.startsWith('tool_errors/'),
  },
  {
    title: 'Conversation (model turns, user turns, policy violations per episode)',
    match: (k) => k === 'mean_turns' || k === 'user_turns_per_episode' || k === 'policy_violations_per_episode',
  },
  { title: 'Step time breakdown (s)', match: (k) => /^time_.*_s$/.test(k) },
  { title: 'Response length (generated tokens)', match: (k) => k === 'response_tokens_mean' },
  { title: 'Gradient norm', match: (k) => k === 'train/grad_norm' },
];

const EVAL_FIGURES = ['accuracy', 'reward_mean', 'tool_error_rate'] as const;
/** Whole steps only on the x axis. */
const STEP_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000];
const DASHES: number[][] = [[], [8, 4], [2, 3], [10, 3, 2, 3]];
const COLORS = [
  '#2563eb',
  '#dc2626',
  '#059669',
  '#d97706',
  '#7c3aed',
  '#0891b2',
  '#db2777',
  '#65a30d',
  '#9333ea',
  '#ea580c',
];

export const renderCurves: View = async (params, { main, crumbs }) => {
  const ids = (params.get('runs') ?? '').split(',').filter(Boolean);
  const weight = Math.min(0.99, Math.max(0, Number(params.get('smooth') ?? 0.6) || 0));
  const answers = await Promise.all(ids.map((run) => api('metrics', { run })));
  const sources = await Promise.all(ids.map((run) => api('sources', { run })));
  crumbs(
    ['runs', link('runs', { sel: ids.join(',') })],
    answers.length === 1 ? `${answers[0]!.run.name} ${answers[0]!.run.version}` : `${answers.length} runs`,
  );
  const label = (i: number): string => (answers.length > 1 ? answers[i]!.run.id : '');

  const slider = h('input', {
    type: 'range',
    id: 'smoothing',
    min: 0,
    max: 0.99,
    step: 0.01,
    value: weight,
    onchange: (e) => setParams({ smooth: (e.target as HTMLInputElement).value }),
  });
  const runLines = answers.map((a, i) =>
    runLine(a, sources[i]!.sources, COLORS[i % COLORS.length]!, answers.length > 1),
  );
  const grid = h('div', { class: 'charts', id: 'charts' });
  main.replaceChildren(
    h('h1', {}, answers.length === 1 ? `${answers[0]!.run.name} ${answers[0]!.run.version}` : 'Compare runs'),
    ...runLines,
    h(
      'div',
      { class: 'toolbar' },
      h('label', {}, 'smoothing', slider, h('span', {}, weight.toFixed(2))),
      h('span', { class: 'dim' }, 'drag to zoom · double-click to reset · hover for values'),
    ),
    grid,
  );

  for (const chart of CHARTS) {
    const series = answers.flatMap((a, i) =>
      Object.keys(a.train.series)
        .filter(chart.match)
        .sort(byMainFirst)
        .map((key) => ({
          run: i,
          key,
          name: [label(i), key].filter(Boolean).join(' · '),
          x: a.train.steps,
          y: a.train.series[key]!,
        })),
    );
    if (series.length) grid.append(drawChart(chart.title, series, weight));
  }
  for (const figure of EVAL_FIGURES) {
    const series = answers.flatMap((a, i) => {
      const points = a.evals.filter((e) => typeof e[figure] === 'number' && typeof e.step === 'number');
      return points.length
        ? [
            {
              run: i,
              key: figure,
              name: [label(i), `eval ${figure}`].filter(Boolean).join(' · '),
              x: points.map((e) => e.step!),
              y: points.map((e) => e[figure] as number),
            },
          ]
        : [];
    });
    if (series.length) grid.append(drawChart(`Held-out eval: ${figure}`, series, 0, true));
  }
  if (!grid.childElementCount)
    grid.append(h('p', { class: 'dim', id: 'no-curves' }, 'no metrics yet: curves appear as steps are recorded'));
  return ids;
};

interface Series {
  readonly run: number;
  readonly key: string;
  readonly name: string;
  readonly x: readonly number[];
  readonly y: readonly (number | null)[];
}

function drawChart(title: string, series: readonly Series[], weight: number, points = false): HTMLElement {
  const box = h('div', { class: 'chart', 'data-chart': title }, h('h3', {}, title));
  const tables = series.map(
    (s) =>
      [
        s.x as number[],
        ...(weight > 0 ? [s.y as (number | null)[], smooth(s.y, weight)] : [s.y as (number | null)[]]),
      ] as uPlot.AlignedData,
  );
  const data = uPlot.join(tables);
  const config: uPlot.Series[] = [{ label: 'step' }];
  // Comparing runs: one colour per run (as in the run lines above), one dash pattern per figure.
  const runs = new Set(series.map((s) => s.run)).size;
  const keys = [...new Set(series.map((s) => s.key))];
  series.forEach((s, i) => {
    const color = COLORS[(runs > 1 ? s.run : i) % COLORS.length]!;
    const dash = runs > 1 ? DASHES[keys.indexOf(s.key) % DASHES.length]! : [];
    if (weight > 0)
      config.push({
        label: `${s.name} (raw)`,
        class: 'raw',
        stroke: `${color}40`,
        width: 1,
        dash,
        spanGaps: true,
        value: (_u, v) => valueLabel(v),
      });
    config.push({
      label: s.name,
      stroke: color,
      width: 2,
      dash,
      spanGaps: true,
      points: { show: points },
      value: (_u, v) => valueLabel(v),
    });
  });
  const width = 470;
  // Drawn after the element is in the page, to take the width the grid gave it.
  requestAnimationFrame(() => {
    const plot = new uPlot(
      {
        width: Math.max(320, box.clientWidth - 12 || width),
        height: 220,
        series: config,
        scales: { x: { time: false } },
        axes: [
          { incrs: STEP_TICKS },
          {
            // The labels drawn last are kept on the element, for tests (the canvas holds only pixels).
            values: (_u, splits) => {
              const labels = tickLabels(splits);
              box.dataset.yTicks = labels.join('|');
              return labels;
            },
          },
        ],
        cursor: { sync: { key: 'atk-steps' } },
        legend: { live: true },
      },
      data,
      box,
    );
    box.dataset.series = String(series.length);
    box.dataset.points = String(data[0].length);
    (box as HTMLElement & { plot?: uPlot }).plot = plot;
  });
  return box;
}

/** The run's facts and where its episodes are (the newest step, every step and eval). */
function runLine(a: MetricsAnswer, sources: readonly SourceInfo[], color: string, many: boolean): HTMLElement {
  const r = a.run;
  const newest = [...sources].reverse().find((s) => s.kind === 'train') ?? sources[sources.length - 1];
  const pick = h(
    'select',
    {
      class: 'source-pick',
      onchange: (e) => (location.hash = link('episodes', { run: r.id, source: (e.target as HTMLSelectElement).value })),
    },
    h('option', { value: '' }, 'episodes of…'),
    ...sources.map((s) => h('option', { value: s.id }, s.kind === 'eval' ? s.id : `step ${s.step}`)),
  );
  return h(
    'div',
    { class: 'facts run-facts', 'data-run': r.id },
    many ? h('b', { style: `color: ${color}` }, `${r.name} ${r.version}`) : null,
    h('span', {}, h('span', { class: `status ${r.status}` }, r.status)),
    h('span', { id: many ? null : 'steps-done' }, `step ${r.stepsDone}${r.stepsTotal ? ` / ${r.stepsTotal}` : ''}`),
    h('span', {}, `last reward ${fmt(r.lastReward)}`, ' · ', `best ${fmt(r.bestReward)}`),
    r.evalBefore
      ? h(
          'span',
          {},
          `held-out ${fmt(r.evalBefore.accuracy)}${r.evalAfter && r.evalAfter.label !== r.evalBefore.label ? ` → ${fmt(r.evalAfter.accuracy)}` : ''}`,
        )
      : null,
    newest
      ? h(
          'a',
          { href: link('episodes', { run: r.id, source: newest.id }), class: 'newest-episodes' },
          `episodes of ${newest.kind === 'eval' ? newest.id : `step ${newest.step}`}`,
        )
      : h('span', { class: 'dim' }, 'no episodes yet'),
    sources.length ? pick : null,
    h('span', { class: 'dim' }, r.dir),
  );
}

function byMainFirst(a: string, b: string): number {
  return Number(a.includes('/')) - Number(b.includes('/')) || a.localeCompare(b);
}
