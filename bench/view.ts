// atk view on a large run: a synthetic run directory of 1,000 steps x 100 episodes (100,000 episodes,
// metrics with the figures a real run records), then: the server's indexing time at start (manifest,
// metrics, file list) and for every episode file (what "the same task across steps" reads), the time
// to first paint and to a drawn view of the runs, curves and episodes views in headless Chromium, and
// the bytes each page load transferred. Sizes: VIEW_BENCH_STEPS, VIEW_BENCH_EPISODES. Timing never
// fails the run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { createRunDir } from '../src/runs/index.js';
import { projectRoot } from '../src/util/paths.js';
import { RunCatalog } from '../src/view/run-catalog.js';
import { startViewServer } from '../src/view/server.js';
import { episode, metrics } from './lib/synthetic-run.js';

const STEPS = Number(process.env.VIEW_BENCH_STEPS ?? 1000);
const EPISODES = Number(process.env.VIEW_BENCH_EPISODES ?? 100);
const root = mkdtempSync(join(tmpdir(), 'atk-bench-view-'));

try {
  const t0 = performance.now();
  const run = await createRunDir({
    runsDir: join(root, 'runs'),
    name: 'bench',
    recipeText: 'name: bench\n',
    resolvedYaml: `name: bench\nmodel:\n  path: ${join(projectRoot(), 'models', 'tiny-arith')}\ntrain:\n  steps: ${STEPS}\n`,
    seed: 0,
  });
  for (let step = 1; step <= STEPS; step++) {
    await run.writeTrajectories(
      step,
      Array.from({ length: EPISODES }, (_, i) => episode(step, i)),
    );
    await run.appendMetrics(metrics(step, EPISODES));
  }
  await run.setStatus('finished');
  console.log(
    `synthetic run: ${STEPS} steps x ${EPISODES} episodes written in ${((performance.now() - t0) / 1000).toFixed(1)}s`,
  );

  let t = performance.now();
  const catalog = await RunCatalog.open([join(root, 'runs')]);
  console.log(
    `server index at start (manifest, ${STEPS} metrics lines, file list): ${(performance.now() - t).toFixed(0)} ms`,
  );
  const index = catalog.list()[0]!;
  t = performance.now();
  for (const source of index.sources) await index.episodes(source.id);
  const all = performance.now() - t;
  console.log(
    `every episode file indexed (${STEPS * EPISODES} episodes): ${(all / 1000).toFixed(2)} s (${((all * 1000) / (STEPS * EPISODES)).toFixed(1)} µs per episode)`,
  );

  const server = await startViewServer({ paths: [join(root, 'runs')] });
  const browser = await puppeteer
    .launch({
      executablePath: process.env.ATK_CHROMIUM ?? '/usr/bin/chromium',
      headless: true,
      userDataDir: join(root, 'profile'),
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    })
    .catch((error: unknown) => {
      console.log(`no browser figures: chromium did not start (${(error as Error).message.split('\n')[0]})`);
      return undefined;
    });
  try {
    const id = catalog.list()[0]!.id;
    const views: [string, string][] = [
      ['runs', '#/runs'],
      ['curves', `#/curves?runs=${id}`],
      ['episodes', `#/episodes?run=${id}&source=step-${String(STEPS).padStart(5, '0')}`],
      ['episodes, failed, sorted by reward', `#/episodes?run=${id}&source=step-00001&only=failed&sort=reward&desc=1`],
    ];
    // A first load starts Chromium's own machinery (fonts, compositor); it is not the viewer's time.
    if (browser) {
      const warm = await browser.newPage();
      await warm.goto(`${server.url}#/runs`, { waitUntil: 'load' });
      await warm.close();
    }
    for (const [name, hash] of browser ? views : []) {
      const page = await browser!.newPage();
      await page.setViewport({ width: 1400, height: 900 });
      await page.goto(`${server.url}${hash}`, { waitUntil: 'load' });
      await page.waitForFunction(() => document.getElementById('main')?.dataset.state === 'ready', {
        timeout: 120_000,
        polling: 50,
      });
      // Charts draw in the next animation frame; wait for it before reading the figures.
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const figures = await page.evaluate(() => {
        const paint = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN;
        const ready = performance.getEntriesByName('atk-view-ready-1')[0]?.startTime ?? NaN;
        const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
        const resources = performance.getEntriesByType('resource') as PerformanceResourceTiming[];
        return {
          paint,
          ready,
          bytes: nav.transferSize + resources.reduce((sum, r) => sum + r.transferSize, 0),
          requests: resources.length + 1,
        };
      });
      console.log(
        `${name}: first paint ${figures.paint.toFixed(0)} ms, view drawn ${figures.ready.toFixed(0)} ms, ${(figures.bytes / 1024).toFixed(1)} KiB in ${figures.requests} requests`,
      );
      await page.close();
    }
  } finally {
    await browser?.close();
    await server.close();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
