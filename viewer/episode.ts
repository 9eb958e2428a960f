/** One episode: its facts and conversation, and on demand the token view. */
import type { ConversationPart } from '../src/view/api-types.js';
import { api, link, setParams } from './api.js';
import { fmt, h } from './dom.js';
import { tokenView } from './tokens.js';
import type { View } from './view.js';

export const renderEpisode: View = async (params, { main, crumbs }) => {
  const run = params.get('run') ?? '';
  const source = params.get('source') ?? '';
  const index = Number(params.get('index') ?? 0);
  const showTokens = params.get('tokens') === '1';
  const [{ run: row }, episode, tokens] = await Promise.all([
    api('sources', { run }),
    api('episode', { run, source, index }),
    showTokens ? api('tokens', { run, source, index }) : Promise.resolve(undefined),
  ]);
  crumbs(
    ['runs', link('runs')],
    [`${row.name} ${row.version}`, link('curves', { runs: run })],
    [source, link('episodes', { run, source })],
    `episode ${index}`,
  );
  const r = episode.record;
  const parts = Object.entries(r.reward_parts)
    .map(([k, v]) => `${k} ${fmt(v)}`)
    .join(', ');
  const facts = h(
    'div',
    { class: 'facts', id: 'episode-facts' },
    h(
      'span',
      {},
      h('b', {}, 'task '),
      h(
        'a',
        { href: link('task', { run, task: r.task_id }), id: 'task-link', title: 'this task in every step and eval' },
        r.task_id,
      ),
    ),
    h('span', {}, h('b', {}, 'reward '), fmt(r.reward), parts ? ` (${parts})` : ''),
    h(
      'span',
      { class: r.success && !r.failed ? 'good' : 'bad' },
      r.failed ? 'harness failure' : r.success ? 'success' : 'failed',
    ),
    h('span', {}, `${r.stats.turns} turns`),
    h('span', {}, `${r.stats.toolCalls} tool calls, ${r.stats.toolErrors} errors`),
    h('span', {}, `finish ${r.finish_reason}${r.stats.truncated ? ' (truncated)' : ''}`),
    h('span', {}, `${r.stats.promptTokens} prompt + ${r.stats.generatedTokens} generated tokens`),
    h('span', {}, `policy v${r.policy_version}`),
    r.advantage === null ? null : h('span', {}, `advantage ${fmt(r.advantage)}`),
    h('span', { class: 'dim' }, `group ${r.group} sample ${r.sample} · ${(r.stats.wallMs / 1000).toFixed(2)}s`),
  );
  const nav = h(
    'div',
    { class: 'toolbar' },
    index > 0
      ? h('a', { href: link('episode', { run, source, index: index - 1, tokens: showTokens }) }, '‹ previous episode')
      : null,
    h(
      'a',
      { href: link('episode', { run, source, index: index + 1, tokens: showTokens }), id: 'next-episode' },
      'next episode ›',
    ),
    h(
      'button',
      { id: 'toggle-tokens', onclick: () => setParams({ tokens: !showTokens }) },
      showTokens ? 'Hide tokens' : 'Show tokens',
    ),
  );
  const info = r.reward_info
    ? h('pre', { class: 'dim', id: 'reward-info' }, `reward info: ${JSON.stringify(r.reward_info)}`)
    : null;
  const error = r.error ? h('pre', { class: 'bad' }, `error: ${r.error}`) : null;
  const turns = episode.turns.map((turn) =>
    h('div', { class: `turn ${turn.role}` }, h('div', { class: 'role' }, turn.role), ...turn.parts.map(partNode)),
  );
  const tokenSection = tokens ? [tokenView(tokens, params.get('color') === 'mask' ? 'mask' : 'logprob')] : [];
  main.replaceChildren(
    h('h1', {}, `Episode ${index} of ${source}`),
    facts,
    nav,
    ...[info, error].filter((x) => x !== null),
    ...tokenSection,
    h('h2', {}, 'Conversation'),
    h('div', { id: 'conversation' }, turns),
  );
  return [run];
};

function partNode(part: ConversationPart): HTMLElement {
  switch (part.kind) {
    case 'text':
      return h('pre', {}, part.text);
    case 'reasoning':
      return h('pre', { class: 'reasoning' }, part.text);
    case 'toolCall':
      return h('pre', { class: 'call' }, `→ ${part.name}(${JSON.stringify(part.input)})`);
    case 'toolResult':
      return h(
        'pre',
        { class: `result ${part.status}` },
        `← ${part.name}${part.status === 'error' ? ' error' : ''}: ${part.text}`,
      );
  }
}
