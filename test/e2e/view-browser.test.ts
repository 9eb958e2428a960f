/**
 * `atk view` in a real browser (Debian's chromium, driven by puppeteer-core): the built CLI serves a
 * runs directory while the smoke recipe trains into it with the real trainer and embedded engine;
 * the page must show the run appear and its steps arrive without a reload, then its episodes (the
 * failed ones filtered), one episode's token view with the drift audit, the same task across steps,
 * and the live run compared with a recorded one, with no console error anywhere. Screenshots of the
 * main views are written to test-artifacts/view/. Every wait is on a page state, never a fixed sleep,
 * with generous limits: a loaded 2-core machine runs the trainer beside the browser.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { recordRun } from '../../src/__fixtures__/recorded-run.js';
import { projectRoot } from '../../src/util/paths.js';
import { BIN, readJsonl } from './run-helpers.js';

const CHROMIUM = process.env.ATK_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = join(projectRoot(), 'test-artifacts', 'view');
const LIVE = 'smoke-quickstart/v001';
const RECORDED = 'fixture/v001';
const WAIT = { timeout: 180_000, polling: 250 } as const;

let root: string;
let runsDir: string;
let viewer: ResultPromise | undefined;
let url: string;
let browser: Browser | undefined;
let page: Page;
let training: ResultPromise | undefined;
const consoleErrors: string[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'atk-view-e2e-'));
  runsDir = join(root, 'runs');
  mkdirSync(ARTIFACTS, { recursive: true });
  // A finished run to compare with (episodes recorded by the run loop's writers over a scripted engine).
  await recordRun(root, { metricSteps: 6 });
  viewer = execa('node', [BIN, 'view', runsDir], { cwd: projectRoot(), reject: false });
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    viewer!.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /http:\/\/127\.0\.0\.1:\d+\//.exec(out);
      if (found) resolve(found[0]);
    });
    void viewer!.then((r) => reject(new Error(`atk view exited ${r.exitCode}: ${r.stderr}`)));
  });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: join(root, 'chromium-profile'),
    protocolTimeout: 180_000,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  page.setDefaultTimeout(180_000);
  page.on('console', (m) => void (m.type() === 'error' && consoleErrors.push(m.text())));
  page.on('pageerror', (e) => void consoleErrors.push(String(e)));
  page.on(
    'requestfailed',
    (r) =>
      void (
        r.url().startsWith(url) &&
        !r.url().includes('/api/events') &&
        consoleErrors.push(`request failed: ${r.url()}`)
      ),
  );
}, 300_000);

afterAll(async () => {
  // Chromium first (its event stream holds the server), then the viewer, then the run if a test left it.
  const child = browser?.process();
  await Promise.race([browser?.close(), new Promise((r) => setTimeout(r, 20_000))]).catch(() => undefined);
  if (child && child.exitCode === null) child.kill('SIGKILL');
  viewer?.kill('SIGTERM');
  await viewer;
  training?.kill('SIGINT');
  await training;
}, 120_000);

/** Go to a view by its URL fragment and wait until it has drawn. */
async function go(hash: string, view: string): Promise<void> {
  const before = await page.evaluate(() => Number(document.getElementById('main')?.dataset.renders ?? 0));
  await page.evaluate((h) => void (location.hash = h), hash);
  await rendered(view, before);
}

/** Waits for a render after the `before`th to finish on `view`. */
async function rendered(view: string, before: number): Promise<void> {
  const state = await page.waitForFunction(
    (v, n) => {
      const main = document.getElementById('main')!;
      return (
        main.dataset.view === v &&
        Number(main.dataset.renders) > n &&
        main.dataset.state !== 'loading' &&
        main.dataset.state
      );
    },
    WAIT,
    view,
    before,
  );
  expect(await state.jsonValue()).toBe('ready');
}

async function renders(): Promise<number> {
  return page.evaluate(() => Number(document.getElementById('main')!.dataset.renders));
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
}

function stepRecords(step: number): Record<string, unknown>[] {
  return readJsonl(join(runsDir, LIVE, 'trajectories', `step-${String(step).padStart(5, '0')}.jsonl`));
}

describe('atk view in Chromium', () => {
  test('returns a live run whose steps arrive without a reload', async () => {
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => document.getElementById('main')?.dataset.state === 'ready', WAIT);
    expect(await page.$$eval('.run-row', (rows) => rows.map((r) => (r as HTMLElement).dataset.run))).toStrictEqual([
      RECORDED,
    ]);

    training = execa(
      'node',
      [
        BIN,
        'run',
        'recipes/smoke/quickstart.yaml',
        'train.steps=5',
        'train.save_every=0',
        `output.runs_dir=${runsDir}`,
      ],
      { reject: false, cwd: projectRoot(), timeout: 400_000, env: { CI: 'true' } },
    );
    // The new run appears in the open runs table, by server-sent event.
    await page.waitForSelector(`.run-row[data-run="${LIVE}"]`, WAIT);
    await page.evaluate(() => void ((window as unknown as { sameDocument: boolean }).sameDocument = true));
    await go(`#/curves?runs=${LIVE}`, 'curves');
    const stepShown = (): Promise<number> =>
      page.$eval('#steps-done', (e) => Number(/step (\d+)/.exec(e.textContent ?? '')?.[1] ?? -1));
    await page.waitForFunction(() => /step [1-9]/.test(document.getElementById('steps-done')?.textContent ?? ''), WAIT);
    const first = await stepShown();
    await page.waitForFunction(
      (n) => Number(/step (\d+)/.exec(document.getElementById('steps-done')?.textContent ?? '')?.[1]) > n,
      WAIT,
      first,
    );
    expect(await stepShown()).toBeGreaterThan(first);
    await page.waitForSelector('.chart[data-chart^="Reward"] canvas', WAIT);
    await shot('curves-live');

    const result = await training;
    expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    await page.waitForFunction(
      () => /step 5 \/ 5/.test(document.getElementById('steps-done')?.textContent ?? ''),
      WAIT,
    );
    // The run's last write (its manifest's status) reaches the page by server-sent event, maybe after
    // the process has exited: wait for it rather than read it at once.
    await page.waitForFunction(() => document.querySelector('.run-facts .status')?.textContent === 'finished', WAIT);
    expect(await page.$eval('.run-facts .status', (e) => e.textContent)).toBe('finished');
    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    // Every chart drew every step: the reward chart's x axis holds steps 1..5.
    expect(await page.$eval('.chart[data-chart^="Reward"]', (e) => (e as HTMLElement).dataset.points)).toBe('5');
  }, 600_000);

  test('returns the episodes of a step, and only the failed ones when filtered', async () => {
    const records = stepRecords(2);
    const failed = records.flatMap((r, i) => (r.success !== true || r.failed === true ? [i] : []));
    await go(`#/episodes?run=${LIVE}&source=step-00002`, 'episodes');
    expect(
      await page.$$eval('.episode-row', (rows) => rows.map((r) => Number((r as HTMLElement).dataset.index))),
    ).toStrictEqual(records.map((_, i) => i));
    expect(await page.$eval('#episode-count', (e) => e.textContent)).toBe(
      `${records.length} of ${records.length} episodes match`,
    );
    await shot('episodes');

    const before = await renders();
    await page.select('#only-filter', 'failed');
    await rendered('episodes', before);
    expect(
      await page.$$eval('.episode-row', (rows) => rows.map((r) => Number((r as HTMLElement).dataset.index))),
    ).toStrictEqual(failed);
    expect(await page.$eval('#episode-count', (e) => e.textContent)).toBe(
      `${failed.length} of ${records.length} episodes match`,
    );
    expect(await page.evaluate(() => location.hash)).toBe(
      `#/episodes?run=${encodeURIComponent(LIVE)}&source=step-00002&only=failed`,
    );
    expect(await page.$eval('#tool-use h2', (e) => e.textContent)).toBe('Tool use');
  }, 300_000);

  test('returns an episode, its token view with hover facts and the drift verdict, and its task across steps', async () => {
    const records = stepRecords(2);
    const index = Number(await page.$eval('.episode-row', (r) => (r as HTMLElement).dataset.index));
    const before = await renders();
    await page.click(`.episode-row[data-index="${index}"]`);
    await rendered('episode', before);
    const record = records[index] as { task_id: string; trajectory: { ids: number[] }; messages: unknown[] };
    expect(await page.$eval('#task-link', (e) => e.textContent)).toBe(record.task_id);
    expect(await page.$$eval('#conversation .turn', (turns) => turns.length)).toBe(record.messages.length);

    const beforeTokens = await renders();
    await page.click('#toggle-tokens');
    await rendered('episode', beforeTokens);
    expect(await page.$$eval('#token-view .tok', (spans) => spans.length)).toBe(record.trajectory.ids.length);
    const segments = await page.$$eval('#token-view .segment', (s) => s.map((e) => (e as HTMLElement).dataset.source));
    expect(segments[0]).toBe('prompt');
    await page.hover('#token-view .tok.model');
    const hover = await page.$eval('#tok-hover', (e) => ({
      hidden: (e as HTMLElement).hidden,
      text: e.textContent ?? '',
    }));
    expect(hover.hidden).toBe(false);
    expect(hover.text).toMatch(/^#\d+ +id \d+ .*\nlogprob -?\d+\.\d{4} +p \d\.\d{3}\nsegment model, turn \d/);
    expect(await page.$eval('#drift b', (e) => e.textContent)).toMatch(/^drift: /);
    await shot('tokens');

    const expected = [1, 2, 3, 4, 5].flatMap((s) =>
      stepRecords(s)
        .filter((r) => r.task_id === record.task_id)
        .map(() => `step-${String(s).padStart(5, '0')}`),
    );
    const evals = ['step-00000', 'step-00005'].flatMap((label) =>
      readJsonl(join(runsDir, LIVE, 'eval', label, 'results.jsonl'))
        .filter((r) => r.task_id === record.task_id)
        .map(() => `eval/${label}`),
    );
    const beforeTask = await renders();
    await page.click('#task-link');
    await rendered('task', beforeTask);
    expect(
      await page.$$eval('.task-episode', (cards) => cards.map((c) => (c as HTMLElement).dataset.source)),
    ).toStrictEqual([...expected, ...evals]);
  }, 300_000);

  test('returns two runs overlaid on one set of curves', async () => {
    await go('#/runs', 'runs');
    for (const id of [LIVE, RECORDED]) {
      const before = await renders();
      await page.click(`.select-run[data-run="${id}"]`);
      await rendered('runs', before);
    }
    expect(await page.$eval('#compare', (b) => b.textContent)).toBe('Compare selected (2)');
    await shot('runs');
    const before = await renders();
    await page.click('#compare');
    await rendered('curves', before);
    await page.waitForSelector('.chart[data-chart^="Reward"] .u-legend', WAIT);
    const labels = await page.$$eval('.chart[data-chart^="Reward"] .u-legend .u-series .u-label', (ls) =>
      ls.map((l) => l.textContent),
    );
    expect(labels).toEqual(expect.arrayContaining([`${LIVE} · reward_mean`, `${RECORDED} · reward_mean`]));
    expect(await page.$$eval('.run-facts', (rows) => rows.map((r) => (r as HTMLElement).dataset.run))).toStrictEqual([
      LIVE,
      RECORDED,
    ]);
    await shot('compare');
  }, 300_000);

  test('returns distinct y-axis labels on the mismatch chart of a run whose mismatch is about 1e-7', async () => {
    // Loads the page when run alone (-t), without the live run's test that opens it.
    if (!page.url().startsWith(url)) await page.goto(url, { waitUntil: 'load' });
    await go(`#/curves?runs=${RECORDED}`, 'curves');
    const chart = '.chart[data-chart^="Train/inference mismatch"]';
    await page.waitForFunction((c) => (document.querySelector(c) as HTMLElement | null)?.dataset.yTicks, WAIT, chart);
    const ticks = (await page.$eval(chart, (e) => (e as HTMLElement).dataset.yTicks!)).split('|').filter(Boolean);
    expect(ticks.length).toBeGreaterThan(1);
    expect(new Set(ticks).size).toBe(ticks.length);
    for (const tick of ticks) expect(tick).toMatch(/^(0|-?\d(\.\d+)?e-[78])$/);
  }, 300_000);

  test('returns no console error, failed request or uncaught exception on any page', () => {
    expect(consoleErrors).toStrictEqual([]);
  });
});
