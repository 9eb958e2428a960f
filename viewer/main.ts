/**
 * The viewer's entry: routes the URL fragment to a view, and re-renders the view when the server
 * says (server-sent events) that a run it shows has changed.
 */
import { currentRoute } from './api.js';
import { renderCurves } from './curves.js';
import { h } from './dom.js';
import { renderEpisode } from './episode.js';
import { renderEpisodes } from './episodes.js';
import { renderRuns } from './runs.js';
import { renderTask } from './task.js';
import type { View, ViewContext } from './view.js';

const VIEWS: Record<string, View> = {
  runs: renderRuns,
  curves: renderCurves,
  episodes: renderEpisodes,
  episode: renderEpisode,
  task: renderTask,
};

const main = document.getElementById('main')!;
const crumbsEl = document.getElementById('crumbs')!;
let dependsOn: readonly string[] | '*' = [];
let renderCount = 0;
let rendering: Promise<void> = Promise.resolve();

const context: ViewContext = {
  main,
  crumbs(...items) {
    crumbsEl.replaceChildren(
      ...items.map((item) => (typeof item === 'string' ? h('span', {}, item) : h('a', { href: item[1] }, item[0]))),
    );
  },
};

/** Renders the current route; calls are queued so that two renders never interleave. */
function render(reason: 'navigate' | 'live'): Promise<void> {
  rendering = rendering.then(async () => {
    const { view, params } = currentRoute();
    const draw = VIEWS[view] ?? renderRuns;
    const scroll = window.scrollY;
    main.dataset.state = 'loading';
    try {
      dependsOn = await draw(params, context);
      main.dataset.state = 'ready';
      // For the benchmark: when each view was drawn, on the page's own clock.
      performance.mark(`atk-view-ready-${renderCount + 1}`);
    } catch (error) {
      main.replaceChildren(
        h('p', { class: 'bad', id: 'view-error' }, `could not show this view: ${(error as Error).message}`),
      );
      main.dataset.state = 'error';
    }
    main.dataset.renders = String(++renderCount);
    main.dataset.view = view;
    if (reason === 'live') window.scrollTo(0, scroll);
  });
  return rendering;
}

function listen(): void {
  const live = document.getElementById('live')!;
  const events = new EventSource('/api/events');
  events.onopen = () => {
    live.className = 'on';
    live.textContent = 'live';
  };
  events.onerror = () => {
    live.className = '';
    live.textContent = 'reconnecting…';
  };
  events.addEventListener('runs', (event) => {
    const { changed } = JSON.parse((event as MessageEvent<string>).data) as { changed: string[] };
    if (dependsOn === '*' || changed.some((id) => dependsOn.includes(id))) void render('live');
  });
}

window.addEventListener('hashchange', () => void render('navigate'));
listen();
void render('navigate');
