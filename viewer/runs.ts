/** The runs table: filters by name and status, and a selection to compare on one set of curves. */
import { api, link, setParams } from './api.js';
import { duration, fmt, h, pct } from './dom.js';
import type { View } from './view.js';

export const renderRuns: View = async (params, { main, crumbs }) => {
  crumbs('runs');
  const { runs } = await api('runs');
  const q = (params.get('q') ?? '').toLowerCase();
  const status = params.get('status') ?? '';
  const selected = new Set((params.get('sel') ?? '').split(',').filter(Boolean));
  const shown = runs.filter(
    (r) =>
      (!q || `${r.name}/${r.version} ${r.dataset ?? ''}`.toLowerCase().includes(q)) && (!status || r.status === status),
  );

  const compare = h(
    'button',
    {
      class: 'primary',
      id: 'compare',
      disabled: selected.size < 1,
      onclick: () => (location.hash = link('curves', { runs: [...selected].join(',') })),
    },
    `Compare selected (${selected.size})`,
  );
  const toolbar = h(
    'div',
    { class: 'toolbar' },
    h(
      'label',
      {},
      'name',
      h('input', {
        id: 'runs-filter',
        type: 'search',
        value: params.get('q') ?? '',
        placeholder: 'filter',
        onchange: (e) => setParams({ q: (e.target as HTMLInputElement).value }),
      }),
    ),
    h('label', {}, 'status', statusSelect(status)),
    compare,
    h('span', { class: 'dim', id: 'runs-count' }, `${shown.length} of ${runs.length} runs`),
  );
  const head = h(
    'tr',
    {},
    h('th', {}, ''),
    ...[
      'run',
      'status',
      'steps',
      'best reward',
      'last reward',
      'held-out before → after',
      'duration',
      'dataset',
      'started',
    ].map((t) => h('th', {}, t)),
  );
  const rows = shown.map((r) => {
    const box = h('input', {
      type: 'checkbox',
      class: 'select-run',
      'data-run': r.id,
      checked: selected.has(r.id),
      onchange: (e) => {
        if ((e.target as HTMLInputElement).checked) selected.add(r.id);
        else selected.delete(r.id);
        setParams({ sel: [...selected].join(',') });
      },
    });
    const evals = r.evalBefore
      ? `${pct(r.evalBefore.accuracy)}${r.evalAfter && r.evalAfter.label !== r.evalBefore.label ? ` → ${pct(r.evalAfter.accuracy)}` : ''}`
      : '-';
    return h(
      'tr',
      { class: 'run-row', 'data-run': r.id },
      h('td', {}, box),
      h('td', {}, h('a', { href: link('curves', { runs: r.id }), class: 'run-link' }, `${r.name} ${r.version}`)),
      h('td', {}, h('span', { class: `status ${r.status}` }, r.status)),
      h('td', { class: 'num steps' }, `${r.stepsDone}${r.stepsTotal ? ` / ${r.stepsTotal}` : ''}`),
      h('td', { class: 'num' }, fmt(r.bestReward)),
      h('td', { class: 'num' }, fmt(r.lastReward)),
      h('td', { class: 'num' }, evals),
      h('td', { class: 'num' }, duration(r.durationS)),
      h('td', {}, r.dataset ?? '-'),
      h('td', { class: 'dim' }, r.startedAt.replace('T', ' ').slice(0, 19)),
    );
  });
  main.replaceChildren(
    h('h1', {}, 'Runs'),
    toolbar,
    h('table', { class: 'grid', id: 'runs-table' }, h('thead', {}, head), h('tbody', {}, rows)),
  );
  return '*';
};

function statusSelect(current: string): HTMLSelectElement {
  const options = ['', 'running', 'finished', 'failed', 'interrupted', 'stale'].map((s) =>
    h('option', { value: s, selected: s === current }, s || 'any'),
  );
  return h(
    'select',
    { id: 'status-filter', onchange: (e) => setParams({ status: (e.target as HTMLSelectElement).value }) },
    options,
  );
}
