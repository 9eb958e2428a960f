import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { findRun, listRuns, overview, processGone } from './list.js';
import type { Manifest } from './manifest.js';
import { createRunDir, type RunDir } from './run-dir.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';

const runsDir = tempDirs('atk-list-');

async function newRun(dir: string, name = 'demo', resolvedYaml = 'train:\n  steps: 4\n'): Promise<RunDir> {
  const run = await createRunDir({ runsDir: dir, name, recipeText: 'x', resolvedYaml, seed: 1 });
  await run.release();
  return run;
}

/** Replace manifest fields directly (updateManifest would stamp updated_at). */
function patchManifest(run: RunDir, facts: Record<string, unknown>): void {
  const manifest = JSON.parse(readFileSync(run.paths.manifest, 'utf8')) as Manifest;
  writeFileSync(run.paths.manifest, JSON.stringify({ ...manifest, ...facts }));
}

async function deadPid(): Promise<number> {
  return Number((await execa('node', ['-e', 'process.stdout.write(String(process.pid))'])).stdout);
}

async function errorOf(promise: Promise<unknown>): Promise<[string, string | undefined]> {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(InputError);
  return [(error as InputError).message, (error as InputError).hint];
}

describe('listRuns', () => {
  test('returns runs by name then version, skipping hidden names and version directories without a manifest', async () => {
    const dir = runsDir();
    for (const name of ['zeta', 'alpha', 'mid', '.trash']) await newRun(dir, name);
    await newRun(dir, 'alpha');
    mkdirSync(join(dir, 'alpha', 'v003')); // allocated, killed before its manifest
    writeFileSync(join(dir, 'notes.txt'), 'not a run\n');
    expect((await listRuns(dir)).map((r) => `${r.name}/${r.version}`)).toStrictEqual([
      'alpha/v001',
      'alpha/v002',
      'mid/v001',
      'zeta/v001',
    ]);
    expect(await listRuns(join(dir, 'missing'))).toStrictEqual([]);
  });
});

describe('overview', () => {
  test('returns the duration to finished_at, to updated_at for an ended run without it, and to now while running', async () => {
    const run = await newRun(runsDir());
    const started_at = '2026-01-01T00:00:00.000Z';
    patchManifest(run, { status: 'finished', started_at, finished_at: '2026-01-01T00:01:30.000Z' });
    expect((await overview(run)).durationS).toBe(90);
    patchManifest(run, { status: 'failed', finished_at: undefined, updated_at: '2026-01-01T00:00:12.500Z' });
    expect((await overview(run)).durationS).toBe(12.5);
    patchManifest(run, { status: 'interrupted', updated_at: '2025-12-31T23:59:00.000Z' });
    expect((await overview(run)).durationS).toBe(0);
    const now = new Date(Date.now() - 30_000).toISOString();
    patchManifest(run, { status: 'running', pid: process.pid, started_at: now, updated_at: now });
    const running = await overview(run);
    expect([running.status, running.durationS >= 30, running.durationS < 300]).toStrictEqual(['running', true, true]);
  });

  test('returns stale only for a running run of this host whose process is gone', async () => {
    const run = await newRun(runsDir());
    const pid = await deadPid();
    patchManifest(run, { status: 'finished', pid });
    expect((await overview(run)).status).toBe('finished');
    patchManifest(run, { status: 'running', pid });
    expect((await overview(run)).status).toBe('stale');
    const manifest = JSON.parse(readFileSync(run.paths.manifest, 'utf8')) as Manifest;
    patchManifest(run, { host: { ...manifest.host, hostname: `not-${manifest.host.hostname}` } });
    expect((await overview(run)).status).toBe('running');
  });

  test('returns a running run whose process exists but may not be signalled as running', async () => {
    const run = await newRun(runsDir());
    const manifest = JSON.parse(readFileSync(run.paths.manifest, 'utf8')) as Manifest;
    const kill = process.kill;
    try {
      process.kill = (() => {
        throw Object.assign(new Error('EPERM'), { code: 'EPERM' });
      }) as typeof process.kill;
      expect(processGone(manifest)).toBe(false);
    } finally {
      process.kill = kill;
    }
  });

  test('returns steps from lines without a kind as training lines, and 0 for a last line without a step', async () => {
    const run = await newRun(runsDir());
    await run.appendMetrics({ step: 3, reward_mean: 0.3 });
    expect([(await overview(run)).stepsDone, (await overview(run)).lastReward]).toStrictEqual([3, 0.3]);
    await run.appendMetrics({ kind: 'train', reward_mean: 0.4 });
    expect([(await overview(run)).stepsDone, (await overview(run)).lastReward]).toStrictEqual([0, 0.4]);
  });

  test('returns no total steps for a missing, empty, train-less or non-numeric resolved.yaml', async () => {
    const dir = runsDir();
    const totals: unknown[] = [];
    for (const yaml of ['', 'name: x\n', 'train:\n  lr: 1\n', 'train:\n  steps: many\n', 'train:\n  steps: 9\n']) {
      const run = await newRun(dir, 'demo', yaml);
      totals.push((await overview(run)).stepsTotal);
    }
    const run = await newRun(dir);
    unlinkSync(run.paths.resolved);
    totals.push((await overview(run)).stepsTotal);
    expect(totals).toStrictEqual([undefined, undefined, undefined, undefined, 9, undefined]);
  });
});

describe('findRun', () => {
  test('returns the version a latest text file names, or the newest without one, also with a trailing slash', async () => {
    const dir = runsDir();
    for (let i = 0; i < 3; i++) await newRun(dir);
    unlinkSync(join(dir, 'demo', 'latest'));
    expect((await findRun('demo/latest', dir)).version).toBe('v003');
    writeFileSync(join(dir, 'demo', 'latest'), 'v002\n');
    expect([(await findRun('demo/latest', dir)).version, (await findRun('demo/latest/', dir)).version]).toStrictEqual([
      'v002',
      'v002',
    ]);
  });

  test('returns the newest version of a name directory given as a path, relative or absolute', async () => {
    const dir = runsDir();
    await newRun(dir);
    await newRun(dir);
    const elsewhere = runsDir();
    expect((await findRun(relative(process.cwd(), join(dir, 'demo')), elsewhere)).version).toBe('v002');
    expect((await findRun(join(dir, 'demo'), elsewhere)).version).toBe('v002');
    expect((await findRun(`${join(dir, 'demo')}/v001`, elsewhere)).version).toBe('v001');
  });

  test('returns runs whose names look like versions or latest', async () => {
    const dir = runsDir();
    await newRun(dir, 'latest');
    await newRun(dir, 'v100');
    expect([(await findRun('latest', dir)).name, (await findRun('v100', dir)).name]).toStrictEqual(['latest', 'v100']);
  });

  test('rejects a name without runs, suggesting only visible names, and a missing runs directory without a suggestion', async () => {
    const dir = runsDir();
    await newRun(dir, '.demo');
    await newRun(dir, 'other');
    expect(await errorOf(findRun('demo', dir))).toStrictEqual([
      `no run 'demo' in ${dir}`,
      'atk runs ls lists the runs',
    ]);
    const missing = join(dir, 'missing');
    expect((await errorOf(findRun('demo', missing)))[0]).toBe(`no run 'demo' in ${missing}`);
  });

  test('rejects a last part that only resembles a version as part of the name, and a missing version with a hint', async () => {
    const dir = runsDir();
    await newRun(dir);
    for (const ref of ['demo/xv001', 'demo/v001x', 'demo/v01'])
      expect((await errorOf(findRun(ref, dir)))[0]).toBe(`no run '${ref}' in ${dir}`);
    expect(await errorOf(findRun('demo/v002', dir))).toStrictEqual([
      "run 'demo' has no version v002; it has v001",
      'atk runs ls lists the runs',
    ]);
  });
});
