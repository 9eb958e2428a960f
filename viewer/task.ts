/** One task in every step and eval that drew it, side by side: what changed as the policy trained. */
import { api, link } from './api.js';
import { fmt, h } from './dom.js';
import type { View } from './view.js';

export const renderTask: View = async (params, { main, crumbs }) => {
  const run = params.get('run') ?? '';
  const task = params.get('task') ?? '';
  const [{ run: row }, { episodes }] = await Promise.all([api('sources', { run }), api('task', { run, task })]);
  crumbs(['runs', link('runs')], [`${row.name} ${row.version}`, link('curves', { runs: run })], `task ${task}`);
  const cards = episodes.map((e) =>
    h(
      'a',
      {
        class: 'panel task-episode',
        href: link('episode', { run, source: e.source, index: e.index }),
        'data-source': e.source,
        style: 'text-decoration: none; color: inherit',
      },
      h('div', {}, h('b', {}, e.source.startsWith('eval/') ? e.source : `step ${e.step}`), ` · episode ${e.index}`),
      h(
        'div',
        { class: e.success && !e.failed ? 'good' : 'bad' },
        `reward ${fmt(e.reward)} · ${e.failed ? 'harness failure' : e.success ? 'success' : 'failed'}`,
      ),
      h(
        'div',
        { class: 'dim' },
        `${e.turns} turns · ${e.toolCalls} tool calls · ${e.toolErrors} errors · ${e.generatedTokens} tokens · ${e.finishReason}`,
      ),
      h('pre', {}, e.answer || '(no answer)'),
    ),
  );
  main.replaceChildren(
    h('h1', {}, `Task ${task}`),
    h(
      'p',
      { class: 'dim', id: 'task-count' },
      `${episodes.length} episodes in ${new Set(episodes.map((e) => e.source)).size} steps and evals`,
    ),
    h('div', { class: 'side-by-side', id: 'task-episodes' }, cards),
  );
  return [run];
};
