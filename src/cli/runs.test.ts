import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createRunDir } from '../runs/index.js';
import { formatDuration } from '../ui/format.js';
import { runRunsLs, runRunsShow } from './runs.js';

async function runsWithOne(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'atk-cli-runs-'));
  const run = await createRunDir({
    runsDir: dir,
    name: 'quickstart',
    recipeText: 'name: quickstart\n',
    resolvedYaml: 'train:\n  steps: 20\n',
    seed: 3,
  });
  await run.appendMetrics({ kind: 'train', step: 1, reward_mean: 0.25 }); // steps are numbered from 1
  await run.appendMetrics({ kind: 'eval', step: 1, label: 'step-00001', reward_mean: 0.5, accuracy: 0.5, tasks: 200 });
  await run.updateManifest({ engine: { kind: 'embedded' } });
  await run.setStatus('interrupted');
  return dir;
}

describe('runRunsLs', () => {
  test('returns one plain row per run', async () => {
    const dir = await runsWithOne();
    const [head, row, end] = (await runRunsLs(dir, { tty: false })).split('\n');
    expect([head!.split(/\s{2,}/), row!.split(/\s{2,}/).slice(0, 5), end]).toStrictEqual([
      ['name', 'version', 'status', 'steps', 'last reward', 'started', 'duration'],
      ['quickstart', 'v001', 'interrupted', '1/20', '0.250'],
      '',
    ]);
  });

  test('returns a note when there are no runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-cli-runs-'));
    expect(await runRunsLs(dir)).toBe(`no runs in ${dir}\n`);
  });
});

describe('runRunsShow', () => {
  test('returns the manifest facts, the evaluations and facts other parts added', async () => {
    const dir = await runsWithOne();
    const text = await runRunsShow('quickstart', dir, { tty: false });
    expect(text).toMatch(new RegExp(`^run {8}${join(dir, 'quickstart', 'v001')}\nstatus {5}interrupted \\(finished `));
    expect(text).toContain('\nsteps      1/20\nreward     0.250 (last step)\ncheckpoint -\nseed       3 ');
    expect(text).toContain(
      '\nevaluations\nstep  label       reward  accuracy  tasks\n1     step-00001  0.500   0.500     200\n',
    );
    expect(text).toContain('\nmanifest\nengine: {"kind":"embedded"}\n');
  });
});

describe('formatDuration', () => {
  test('returns seconds, minutes and hours', () => {
    expect([formatDuration(42.4), formatDuration(185), formatDuration(7620)]).toStrictEqual([
      '42s',
      '3m 05s',
      '2h 07m',
    ]);
  });
});
