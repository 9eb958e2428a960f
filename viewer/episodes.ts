/**
 * The episodes of one step or eval: sort and filter on the server (failed, truncated, tool error,
 * reward above/below, task id, text), one page at a time; the tool use of those episodes, with calls
 * of tools the agent does not have in one row.
 */
import type { EpisodePage, EpisodeSummary, SourceInfo, ToolUseStats } from '../src/view/api-types.js';
import { api, link, setParams } from './api.js';
import { fmt, h, pct } from './dom.js';
import type { View } from './view.js';

const PAGE = 50;
const COLUMNS: readonly {
  readonly title: string;
  readonly sort?: string;
  readonly num?: boolean;
  readonly cell: (e: EpisodeSummary) => Node | string;
}[] = [
  { title: '#', sort: 'index', num: true, cell: (e) => String(e.index) },
  { title: 'task', sort: 'taskId', cell: (e) => e.taskId },
  { title: 'reward', sort: 'reward', num: true, cell: (e) => fmt(e.reward) },
  {
    title: 'parts',
    cell: (e) =>
      Object.entries(e.rewardParts)
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(', '),
  },
  { title: 'outcome', cell: (e) => outcome(e) },
  { title: 'turns', sort: 'turns', num: true, cell: (e) => String(e.turns) },
  { title: 'tool calls', sort: 'toolCalls', num: true, cell: (e) => String(e.toolCalls) },
  { title: 'tool errors', sort: 'toolErrors', num: true, cell: (e) => String(e.toolErrors) },
  { title: 'finish', cell: (e) => e.finishReason },
  { title: 'generated', sort: 'generatedTokens', num: true, cell: (e) => String(e.generatedTokens) },
];

export const renderEpisodes: View = async (params, { main, crumbs }) => {
  const run = params.get('run') ?? '';
  const { run: row, sources } = await api('sources', { run });
  const source =
    params.get('source') || ([...sources].reverse().find((s) => s.kind === 'train') ?? sources[0])?.id || '';
  crumbs(['runs', link('runs')], [`${row.name} ${row.version}`, link('curves', { runs: run })], source || 'episodes');
  if (!source) {
    main.replaceChildren(
      h('h1', {}, 'Episodes'),
      h('p', { class: 'dim', id: 'no-episodes' }, 'no episodes recorded yet'),
    );
    return [run];
  }
  const query = Object.fromEntries(
    ['only', 'above', 'below', 'task', 'q', 'sort', 'desc', 'offset'].map((k) => [k, params.get(k) ?? undefined]),
  );
  const [page, tools] = await Promise.all([
    api('episodes', { run, source, ...query, limit: PAGE }),
    api('tools', { run, source }),
  ]);

  const sort = params.get('sort') ?? 'index';
  const desc = params.get('desc') === '1';
  const head = h(
    'tr',
    {},
    ...COLUMNS.map((c) =>
      h(
        'th',
        {
          class: `${c.num ? 'num ' : ''}${c.sort ? 'sortable' : ''}`,
          'data-sort': c.sort,
          onclick: c.sort
            ? () =>
                setParams({
                  sort: c.sort,
                  desc: c.sort === sort ? !desc : c.sort !== 'index' && c.sort !== 'taskId',
                  offset: null,
                })
            : undefined,
        },
        c.title,
        c.sort === sort ? (desc ? ' ▾' : ' ▴') : '',
      ),
    ),
    h('th', {}, 'answer'),
  );
  const rows = page.episodes.map((e) =>
    h(
      'tr',
      {
        class: 'clickable episode-row',
        'data-index': e.index,
        onclick: () => (location.hash = link('episode', { run, source, index: e.index })),
      },
      ...COLUMNS.map((c) => h('td', { class: c.num ? 'num' : '' }, c.cell(e))),
      h('td', { class: 'text' }, e.answer),
    ),
  );
  main.replaceChildren(
    h('h1', {}, `Episodes of ${source.startsWith('eval/') ? source : `step ${Number(source.slice(5))}`}`),
    toolbar(params, sources, source),
    h('p', { id: 'episode-count', class: 'dim' }, `${page.matched} of ${page.total} episodes match`),
    h('table', { class: 'grid', id: 'episodes-table' }, h('thead', {}, head), h('tbody', {}, rows)),
    pager(page),
    toolPanel(tools),
  );
  return [run];
};

function toolbar(params: URLSearchParams, sources: readonly SourceInfo[], source: string): HTMLElement {
  const value = (k: string): string => params.get(k) ?? '';
  const onChange = (key: string) => (e: Event) =>
    setParams({ [key]: (e.target as HTMLInputElement).value, offset: null });
  const only = h(
    'select',
    { id: 'only-filter', onchange: onChange('only') },
    ...[
      ['', 'all'],
      ['failed', 'failed'],
      ['success', 'succeeded'],
      ['truncated', 'truncated'],
      ['toolError', 'tool error'],
    ].map(([v, t]) => h('option', { value: v!, selected: value('only') === v }, t!)),
  );
  const pick = h(
    'select',
    {
      id: 'source-filter',
      onchange: (e) => setParams({ source: (e.target as HTMLSelectElement).value, offset: null }),
    },
    ...sources.map((s) =>
      h('option', { value: s.id, selected: s.id === source }, s.kind === 'eval' ? s.id : `step ${s.step}`),
    ),
  );
  return h(
    'div',
    { class: 'toolbar' },
    h('label', {}, 'episodes of', pick),
    h('label', {}, 'show', only),
    h(
      'label',
      {},
      'reward >',
      h('input', {
        type: 'number',
        step: 'any',
        id: 'above-filter',
        value: value('above'),
        onchange: onChange('above'),
      }),
    ),
    h(
      'label',
      {},
      'reward <',
      h('input', {
        type: 'number',
        step: 'any',
        id: 'below-filter',
        value: value('below'),
        onchange: onChange('below'),
      }),
    ),
    h(
      'label',
      {},
      'task',
      h('input', { type: 'search', id: 'task-filter', value: value('task'), onchange: onChange('task') }),
    ),
    h(
      'label',
      {},
      'text',
      h('input', {
        type: 'search',
        id: 'text-filter',
        value: value('q'),
        placeholder: 'in the conversation',
        onchange: onChange('q'),
      }),
    ),
  );
}

function pager(page: EpisodePage): HTMLElement {
  const last = Math.min(page.matched, page.offset + page.episodes.length);
  return h(
    'div',
    { class: 'pager' },
    h(
      'button',
      {
        id: 'prev-page',
        disabled: page.offset === 0,
        onclick: () => setParams({ offset: Math.max(0, page.offset - PAGE) || null }),
      },
      '‹ previous',
    ),
    h('span', { class: 'dim' }, page.matched ? `${page.offset + 1}–${last} of ${page.matched}` : 'none'),
    h(
      'button',
      { id: 'next-page', disabled: last >= page.matched, onclick: () => setParams({ offset: page.offset + PAGE }) },
      'next ›',
    ),
  );
}

function toolPanel(t: ToolUseStats): HTMLElement {
  const rows = t.tools.map((x) =>
    h(
      'tr',
      {},
      h('td', {}, x.name),
      h('td', { class: 'num' }, x.calls),
      h('td', { class: 'num' }, pct(x.episodeShare)),
      h('td', { class: 'num' }, x.errors),
    ),
  );
  const u = t.unknownTools;
  if (u) {
    rows.push(
      h(
        'tr',
        { class: 'unknown-tools' },
        h('td', {}, `${u.name} (${u.names} name${u.names === 1 ? '' : 's'})`),
        h('td', { class: 'num' }, u.calls),
        h('td', { class: 'num' }, pct(u.episodeShare)),
        h('td', { class: 'num' }, u.errors),
      ),
    );
    rows.push(
      h(
        'tr',
        { class: 'examples' },
        h(
          'td',
          { colspan: 4, class: 'dim' },
          `e.g. ${u.examples.map((e) => `${JSON.stringify(e.name)} ×${e.calls}`).join(', ')}${u.names > u.examples.length ? ', …' : ''}`,
        ),
      ),
    );
  }
  const errors = t.errors.map((e) => `${e.kind} ${e.count} (${pct(e.rate)} of calls)`).join(' · ');
  return h(
    'div',
    { class: 'panel', id: 'tool-use' },
    h('h2', {}, 'Tool use'),
    h(
      'p',
      { class: 'dim' },
      `${t.toolCalls} calls in ${t.episodes} episodes (${fmt(t.callsPerEpisode, 2)} per episode)${errors ? ` · errors: ${errors}` : ''}`,
    ),
    rows.length
      ? h(
          'table',
          { class: 'grid' },
          h('thead', {}, h('tr', {}, ...['tool', 'calls', 'episodes using it', 'errors'].map((x) => h('th', {}, x)))),
          h('tbody', {}, rows),
        )
      : h('p', { class: 'dim' }, 'no tool calls'),
  );
}

function outcome(e: EpisodeSummary): Node {
  if (e.failed) return h('span', { class: 'bad' }, 'harness failure');
  const text = `${e.success ? 'success' : 'failed'}${e.truncated ? ', truncated' : ''}`;
  return h('span', { class: e.success ? 'good' : 'bad' }, text);
}
