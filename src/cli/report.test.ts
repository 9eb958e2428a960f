import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readPng } from '../__fixtures__/png.js';
import { recordRun } from '../__fixtures__/recorded-run.js';
import { runReport } from './report.js';

const run = promisify(execFile);
let root: string;
let runDir: string;
let html: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-report-'));
  runDir = await recordRun(root, { metricSteps: 40 });
  html = await readFile(await runReport({ run: runDir }), 'utf8');
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** Headless Chromium with nothing that reaches the network. */
async function chromium(args: readonly string[]): Promise<string> {
  const profile = await mkdtemp(join(root, 'chromium-'));
  const flags = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    `--user-data-dir=${profile}`,
  ];
  const { stdout } = await run('chromium', [...flags, ...args], { timeout: 90_000, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

const CURVE_COLORS: readonly [number, number, number][] = [
  [0x25, 0x63, 0xeb],
  [0xdc, 0x26, 0x26],
  [0x05, 0x96, 0x69],
  [0xd9, 0x77, 0x06],
  [0x7c, 0x3a, 0xed],
  [0x08, 0x91, 0xb2],
];

describe('runReport', () => {
  test('returns one self-contained file: no script, no external reference, every section', () => {
    expect(html).not.toMatch(/<script|<link|<img|@import|url\(|src=|href=/i);
    expect(html.match(/https?:\/\/[^"]+/g)?.every((u) => u === 'http://www.w3.org/2000/svg')).toBe(true);
    for (const h of [
      'Training curves',
      'Generation and training overlap',
      'Evaluations',
      'Tool use',
      'Sample trajectories',
    ])
      expect(html).toContain(`<h2>${h}</h2>`);
  });

  test('returns the overlap of generation and training: busy shares, staleness and stale groups dropped', () => {
    expect(html).toContain(
      '<p>Engine busy 90% and trainer busy 70% of the time on average; staleness 0.75 versions on average; 1 group(s) dropped as too stale.</p>',
    );
  });

  test('returns evals before and after with the change, and tool use over every trajectory file', () => {
    expect(html).toContain('<tr><th>accuracy</th><td>0.500</td><td>0.750</td><td class="up">+0.250</td></tr>');
    expect(html).toContain('<p>16 episodes of steps 0..1, 16 tool calls, 1.00 per episode.</p>');
    // Error results are counted per tool; the 4 calls of abacus, a tool the agent does not have, are
    // one row with the name as an example, all failed.
    expect(html).toContain('<tr><th>calculator</th><td>12</td><td>75.0%</td><td>0</td></tr>');
    expect(html).toContain(
      '<tr class="unknown-tools"><th>tools the agent does not have (1 name)</th><td>4</td><td>25.0%</td><td>4</td></tr><tr class="examples"><td colspan="4">e.g. &quot;abacus&quot; ×4</td></tr>',
    );
    expect(html).not.toContain('<tr><th>abacus</th>');
    expect(html).toContain('<tr><th>unknown_tool</th><td>4</td><td>25.0%</td></tr>');
    expect(html).toContain('<tr><th>1 calls</th><td>16</td><td>100.0%</td></tr>');
  });

  test('returns the best, worst and failed sample conversations of the newest step', () => {
    const heads = [...html.matchAll(/<h3>([^<]*)<\/h3>/g)].map((m) => m[1]);
    expect(heads).toStrictEqual([
      'best: task add-1, reward 1 (correct 1, formatted 1), success',
      'worst, failed: task mul-1, reward 0 (correct 0, formatted 1), no success',
    ]);
    expect(html).toContain('<pre class="call">→ calculator({&quot;expression&quot;:&quot;7*8&quot;})</pre>');
    expect(html).toContain('<pre>Answer: 54</pre>');
  });

  test('returns plots that headless Chromium parses and draws', async () => {
    const file = join(runDir, 'report.html');
    const dom = await chromium(['--dump-dom', `file://${file}`]);
    const paths = [...dom.matchAll(/<path class="series" data-series="([^"]+)" data-points="(\d+)" d="([^"]+)"/g)];
    expect(paths.map((p) => [p[1], Number(p[2]), p[3]!.split(/[ML]/).length - 1])).toStrictEqual([
      ['reward_mean', 40, 40],
      ['accuracy', 40, 40],
      ['response_tokens_mean', 40, 40],
      ['train/entropy', 40, 40],
      ['train/kl', 40, 40],
      ['train/mismatch_mean', 40, 40],
      ['engine_busy_share', 40, 40],
      ['trainer_busy_share', 40, 40],
      ['staleness_mean', 40, 40],
      ['staleness_max', 40, 40],
      ['accuracy', 2, 2],
    ]);
    const shot = join(root, 'report.png');
    await chromium([`--screenshot=${shot}`, '--window-size=1280,1400', '--hide-scrollbars', `file://${file}`]);
    const image = readPng(await readFile(shot));
    const counts = CURVE_COLORS.map(() => 0);
    for (let i = 0; i < image.width * image.height; i++) {
      const [r, g, b] = [image.pixels[i * 4]!, image.pixels[i * 4 + 1]!, image.pixels[i * 4 + 2]!];
      CURVE_COLORS.forEach(([cr, cg, cb], k) => {
        if (Math.abs(r - cr) + Math.abs(g - cg) + Math.abs(b - cb) < 40) counts[k]!++;
      });
    }
    // A legend swatch is ~50 pixels; a drawn 40-point curve several hundred.
    for (const n of counts) expect(n).toBeGreaterThan(300);
  });

  test('rejects a directory that is not a run', async () => {
    await expect(runReport({ run: join(root, 'nothing') })).rejects.toThrow(/no run/);
  });
});
