import { execFileSync, spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { platform, release, tmpdir, totalmem } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import {
  atkVersion,
  CHECKPOINT_MARKER,
  createRunDir,
  findRun,
  listRuns,
  openRunDir,
  sha256,
  type RunDir,
} from './index.js';

const CHILD = join(projectRoot(), 'src', '__fixtures__', 'run-dir-child.ts');

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function runsDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'atk-runs-')));
  made.push(dir);
  return dir;
}

function newRun(dir: string, name = 'demo', resolvedYaml = 'name: demo\ntrain:\n  steps: 4\n'): Promise<RunDir> {
  return createRunDir({
    runsDir: dir,
    name,
    recipeText: '# as written\nname: demo\n',
    resolvedYaml,
    seed: 7,
    command: ['atk', 'run', 'demo.yaml'],
  });
}

describe('createRunDir', () => {
  test('returns v001 with the recipe as given, the resolved recipe, subdirectories and a running manifest', async () => {
    const dir = runsDir();
    const run = await newRun(dir);
    expect([run.name, run.version, run.dir]).toStrictEqual(['demo', 'v001', join(dir, 'demo', 'v001')]);
    expect(readFileSync(run.paths.recipe, 'utf8')).toBe('# as written\nname: demo\n');
    expect(readFileSync(run.paths.resolved, 'utf8')).toBe('name: demo\ntrain:\n  steps: 4\n');
    expect(readdirSync(run.dir).sort()).toStrictEqual([
      'checkpoints',
      'eval',
      'logs',
      'manifest.json',
      'recipe.yaml',
      'resolved.yaml',
      'trajectories',
      'writer.lock',
    ]);
    const manifest = await run.manifest();
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    expect({
      status: manifest.status,
      history: manifest.status_history.map((h) => h.status),
      seed: manifest.seed,
      hash: manifest.recipe_sha256,
      node: manifest.node_version,
      pid: manifest.pid,
      commit: manifest.git?.commit,
      command: manifest.command,
    }).toStrictEqual({
      status: 'running',
      history: ['running'],
      seed: 7,
      hash: sha256('name: demo\ntrain:\n  steps: 4\n'),
      node: process.version,
      pid: process.pid,
      commit: head,
      command: ['atk', 'run', 'demo.yaml'],
    });
    expect(manifest.host.cpus).toBeGreaterThan(0);
    expect([manifest.atk_version, manifest.host.os, manifest.host.memory_bytes]).toStrictEqual([
      atkVersion(),
      `${platform()} ${release()}`,
      totalmem(),
    ]);
    expect(Date.parse(manifest.started_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(manifest.started_at).toBe(manifest.updated_at);
  });

  test('returns the next version each time and points latest at the newest', async () => {
    const dir = runsDir();
    const versions = [(await newRun(dir)).version, (await newRun(dir)).version, (await newRun(dir)).version];
    expect(versions).toStrictEqual(['v001', 'v002', 'v003']);
    expect(readlinkSync(join(dir, 'demo', 'latest'))).toBe('v003');
  });

  test('returns distinct versions to four processes that create the same run name at the same instant', async () => {
    const dir = runsDir();
    const startAt = Date.now() + 2500;
    const children = [0, 1, 2, 3].map(() =>
      execa('node', ['--import', 'tsx', CHILD, 'create', dir, 'race', String(startAt)], { cwd: projectRoot() }),
    );
    const versions = (await Promise.all(children)).map((c) => String(c.stdout).trim());
    expect([...versions].sort()).toStrictEqual(['v001', 'v002', 'v003', 'v004']);
  });
});

describe('RunDir', () => {
  test('returns metrics lines as appended, and truncateMetricsAfter keeps steps <= N and step-less lines', async () => {
    const run = await newRun(runsDir());
    for (const step of [0, 1, 2, 3]) await run.appendMetrics({ kind: 'train', step, reward_mean: step / 10 });
    await run.appendMetrics({ kind: 'eval', step: 2, accuracy: 0.5 });
    await run.appendMetrics({ note: 'no step' });
    expect(await run.truncateMetricsAfter(1)).toBe(3);
    expect(await run.readMetrics()).toStrictEqual([
      { kind: 'train', step: 0, reward_mean: 0 },
      { kind: 'train', step: 1, reward_mean: 0.1 },
      { note: 'no step' },
    ]);
  });

  test('returns metrics without the torn last line a killed writer leaves, and truncation drops it from the file', async () => {
    const run = await newRun(runsDir());
    await run.appendMetrics({ kind: 'train', step: 0 });
    writeFileSync(run.paths.metrics, '{"kind":"train","step":1}\n{"kind":"tra', { flag: 'a' });
    expect(await run.readMetrics()).toStrictEqual([
      { kind: 'train', step: 0 },
      { kind: 'train', step: 1 },
    ]);
    await run.truncateMetricsAfter(5);
    expect(readFileSync(run.paths.metrics, 'utf8')).toBe('{"kind":"train","step":0}\n{"kind":"train","step":1}\n');
  });

  test('returns trajectory records per step from step-NNNNN.jsonl files', async () => {
    const run = await newRun(runsDir());
    await run.writeTrajectories(3, [{ a: 1 }, { b: [2] }]);
    await run.writeTrajectories(12, []);
    expect(readdirSync(run.trajectoriesDir).sort()).toStrictEqual(['step-00003.jsonl', 'step-00012.jsonl']);
    expect(await run.readTrajectories(3)).toStrictEqual([{ a: 1 }, { b: [2] }]);
    expect(await run.trajectorySteps()).toStrictEqual([3, 12]);
  });

  test('returns the newest complete checkpoint, keeping only the newest `keep` and dropping incomplete older ones', async () => {
    const run = await newRun(runsDir());
    for (const step of [10, 20, 30]) {
      mkdirSync(run.checkpointDir(step), { recursive: true });
      await run.commitCheckpoint(step, 2);
    }
    mkdirSync(run.checkpointDir(35)); // a killed save: never committed
    expect(await run.latestCheckpoint()).toStrictEqual({ step: 30, dir: join(run.checkpointsDir, 'step-00030') });
    mkdirSync(run.checkpointDir(40));
    await run.commitCheckpoint(40, 2);
    expect(readdirSync(run.checkpointsDir).sort()).toStrictEqual(['step-00030', 'step-00040']);
    expect(JSON.parse(readFileSync(join(run.checkpointDir(40), CHECKPOINT_MARKER), 'utf8')).step).toBe(40);
  });

  test('returns only the newest N step files under keep_trajectories last, the latest always among them', async () => {
    const run = await newRun(runsDir());
    const deleted: number[][] = [];
    for (let step = 1; step <= 7; step++) {
      await run.writeTrajectories(step, [{ step }]);
      deleted.push(await run.pruneTrajectories(step, { last: 3 }));
    }
    expect(deleted).toStrictEqual([[], [], [], [1], [2], [3], [4]]);
    expect(await run.trajectorySteps()).toStrictEqual([5, 6, 7]);
    await run.writeTrajectories(8, [{ step: 8 }]);
    expect(await run.pruneTrajectories(8, { last: 1 })).toStrictEqual([5, 6, 7]);
    expect(await run.readTrajectories(8)).toStrictEqual([{ step: 8 }]);
  });

  test('returns multiples of N and the latest step under keep_trajectories every, and everything under all', async () => {
    const run = await newRun(runsDir());
    for (let step = 1; step <= 11; step++) {
      await run.writeTrajectories(step, [{ step }]);
      await run.pruneTrajectories(step, { every: 5 });
    }
    expect(await run.trajectorySteps()).toStrictEqual([5, 10, 11]);
    await run.writeTrajectories(12, []);
    expect(await run.pruneTrajectories(12, 'all')).toStrictEqual([]);
    expect(await run.trajectorySteps()).toStrictEqual([5, 10, 11, 12]);
  });

  test('returns trajectory files of steps after the resumed one untouched until the resumed run rewrites them', async () => {
    // A run killed after step 9 with its newest checkpoint at step 6 resumes at step 7: the files of
    // steps 7-9 are the old run's and are rewritten as the resumed run reaches them.
    const run = await newRun(runsDir());
    for (let step = 1; step <= 9; step++) {
      await run.writeTrajectories(step, [{ step, run: 'first' }]);
      await run.pruneTrajectories(step, { last: 4 });
    }
    expect(await run.trajectorySteps()).toStrictEqual([6, 7, 8, 9]);
    await run.writeTrajectories(7, [{ step: 7, run: 'resumed' }]);
    expect(await run.pruneTrajectories(7, { last: 1 })).toStrictEqual([6]);
    expect(await run.trajectorySteps()).toStrictEqual([7, 8, 9]);
    expect(await run.readTrajectories(7)).toStrictEqual([{ step: 7, run: 'resumed' }]);
    expect(await run.readTrajectories(9)).toStrictEqual([{ step: 9, run: 'first' }]);
  });

  test('returns the checkpoint resume needs after pruning: the newest complete one, never an incomplete newer one', async () => {
    const run = await newRun(runsDir());
    for (const step of [10, 20]) {
      mkdirSync(run.checkpointDir(step), { recursive: true });
      await run.commitCheckpoint(step, 1);
    }
    mkdirSync(run.checkpointDir(30)); // a save killed half-way: resume must not pick it, and it is not pruned yet
    expect(readdirSync(run.checkpointsDir).sort()).toStrictEqual(['step-00020', 'step-00030']);
    expect(await run.latestCheckpoint()).toStrictEqual({ step: 20, dir: join(run.checkpointsDir, 'step-00020') });
    // The resumed run saves step 30 again, completes it, and only then is step 20 deleted.
    await run.commitCheckpoint(30, 1);
    expect(readdirSync(run.checkpointsDir).sort()).toStrictEqual(['step-00030']);
    expect(await run.latestCheckpoint()).toStrictEqual({ step: 30, dir: join(run.checkpointsDir, 'step-00030') });
  });

  test('returns a manifest with merged facts and a finished status after updates', async () => {
    const run = await newRun(runsDir());
    await Promise.all([
      run.updateManifest({ engine: { kind: 'embedded' } }),
      run.updateManifest({ engine: { version: '1' }, dataset: 'arith' }),
    ]);
    await run.setStatus('failed', 'trainer died');
    const manifest = await run.manifest();
    expect({
      engine: manifest.engine,
      dataset: manifest.dataset,
      status: manifest.status,
      history: manifest.status_history.map((h) => [h.status, h.message]),
    }).toStrictEqual({
      engine: { kind: 'embedded', version: '1' },
      dataset: 'arith',
      status: 'failed',
      history: [
        ['running', undefined],
        ['failed', 'trainer died'],
      ],
    });
    expect(manifest.finished_at).toBe(manifest.updated_at);
    await run.setStatus('running');
    expect((await run.manifest()).finished_at).toBeUndefined();
  });
});

describe('RunDir writers killed mid-write', () => {
  // Big enough that a write takes many syscalls; the child kills itself at a chosen point (see dieAt in
  // the fixture), so whether the kill lands mid-write never depends on timing.
  const BYTES = 4 * 1024 * 1024;
  const OLD = 'old';

  /** A run whose manifest, summary, trajectories and metrics all hold old content; returns it and that content. */
  async function oldRun(): Promise<{ run: RunDir; files: Record<string, string>; old: Record<string, string> }> {
    const run = await newRun(runsDir());
    await run.updateManifest({ padding: OLD });
    await run.writeSummary({ padding: OLD });
    await run.writeTrajectories(1, [{ padding: OLD }]);
    // A long first line, so that the rewrite that keeps it is as big as the other files.
    for (const step of [1, 2, 3])
      await run.appendMetrics({ kind: 'train', step, padding: step === 1 ? OLD.repeat(BYTES) : OLD });
    const files: Record<string, string> = {
      manifest: run.paths.manifest,
      summary: run.paths.summary,
      trajectories: run.trajectoryPath(1),
      'metrics-rewrite': run.paths.metrics,
      'metrics-append': run.paths.metrics,
    };
    const old = Object.fromEntries(Object.entries(files).map(([k, path]) => [k, readFileSync(path, 'utf8')]));
    return { run, files, old };
  }

  /** Run the fixture child that rewrites `file` with BYTES of new content and dies `at`; resolves with how it ended. */
  async function rewriteAndDie(
    run: RunDir,
    file: string,
    at: string,
  ): Promise<{ code: number | null; signal: string | null }> {
    const child = spawn('node', ['--import', 'tsx', CHILD, 'die', run.dir, file, at, String(BYTES)], {
      cwd: projectRoot(),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Temporary files (dot-prefixed) left beside `path`, with their sizes. */
  function leftovers(path: string): number[] {
    const dir = dirname(path);
    return readdirSync(dir)
      .filter((n) => n.startsWith(`.${basename(path)}.`) && n.endsWith('.tmp'))
      .map((n) => statSync(join(dir, n)).size);
  }

  test.each(['manifest', 'summary', 'trajectories', 'metrics-rewrite'])(
    'returns the old %s whole when its writer dies with half the new bytes written, and when it dies before the rename',
    async (file) => {
      const { run, files, old } = await oldRun();
      const path = files[file]!;
      expect(await rewriteAndDie(run, file, 'mid-write')).toStrictEqual({ code: null, signal: 'SIGKILL' });
      expect(readFileSync(path, 'utf8')).toBe(old[file]);
      // The kill landed mid-write: half of a multi-megabyte new file is on disk, only not at `path`.
      expect(leftovers(path).length).toBe(1);
      expect(leftovers(path)[0]).toBeGreaterThan(BYTES / 4);

      expect(await rewriteAndDie(run, file, 'before-rename')).toStrictEqual({ code: null, signal: 'SIGKILL' });
      expect(readFileSync(path, 'utf8')).toBe(old[file]);
      // Directory listings skip the leftovers: the run still has exactly the trajectories it had.
      expect(await run.trajectorySteps()).toStrictEqual([1]);

      expect(await rewriteAndDie(run, file, 'never')).toStrictEqual({ code: 0, signal: null });
      expect(readFileSync(path, 'utf8')).not.toBe(old[file]);
      expect(readFileSync(path, 'utf8').length).toBeGreaterThan(BYTES);
    },
  );

  test('returns the metrics lines appended before a writer that died mid-append, and the resume rewrite drops its torn line', async () => {
    const { run, files, old } = await oldRun();
    const before = await run.readMetrics();
    expect(await rewriteAndDie(run, 'metrics-append', 'mid-write')).toStrictEqual({ code: null, signal: 'SIGKILL' });
    expect(readFileSync(files['metrics-append']!, 'utf8').length).toBeGreaterThan(old['metrics-append']!.length);
    expect(await run.readMetrics()).toStrictEqual(before);
    await run.truncateMetricsAfter(Number.MAX_SAFE_INTEGER); // what resume does first
    expect(readFileSync(files['metrics-append']!, 'utf8')).toBe(old['metrics-append']);
  });
});

describe('openRunDir', () => {
  test('rejects a directory without manifest.json', async () => {
    await expect(openRunDir(runsDir())).rejects.toThrow(InputError);
  });
});

describe('listRuns', () => {
  test('returns each run with steps done, last reward, and stale for a running run whose process is gone', async () => {
    const dir = runsDir();
    const done = await newRun(dir);
    await done.appendMetrics({ kind: 'train', step: 1, reward_mean: 0.25 }); // steps are numbered from 1
    await done.appendMetrics({ kind: 'train', step: 2, reward_mean: 0.5 });
    await done.appendMetrics({ kind: 'eval', step: 2, reward_mean: 0.9 });
    await done.setStatus('finished');
    const orphan = await newRun(dir, 'other');
    const dead = await execa('node', ['-e', 'process.stdout.write(String(process.pid))']);
    await orphan.updateManifest({ pid: Number(dead.stdout) });
    const rows = (await listRuns(dir)).map((r) => [
      r.name,
      r.version,
      r.status,
      r.stepsDone,
      r.stepsTotal,
      r.lastReward,
    ]);
    expect(rows).toStrictEqual([
      ['demo', 'v001', 'finished', 2, 4, 0.5],
      ['other', 'v001', 'stale', 0, 4, undefined],
    ]);
  });

  test('returns the newest training line of a long file, also behind more evals than the lines read from its end', async () => {
    const dir = runsDir();
    const run = await newRun(dir);
    const lines = Array.from({ length: 5000 }, (_, i) =>
      JSON.stringify({ kind: 'train', step: i + 1, reward_mean: i / 1e4 }),
    );
    writeFileSync(run.paths.metrics, `${lines.join('\n')}\n`);
    const first = (await listRuns(dir)).map((r) => [r.stepsDone, r.lastReward]);
    for (let i = 0; i < 40; i++)
      await run.appendMetrics({ kind: 'eval', step: 5000, label: `extra-${i}`, reward_mean: 1 });
    const second = (await listRuns(dir)).map((r) => [r.stepsDone, r.lastReward]);
    expect([first, second]).toStrictEqual([[[5000, 0.4999]], [[5000, 0.4999]]]);
  });
});

describe('findRun', () => {
  test('returns the newest version for a name, a named version, or a run directory', async () => {
    const dir = runsDir();
    await newRun(dir);
    await newRun(dir);
    expect((await findRun('demo', dir)).version).toBe('v002');
    expect((await findRun('demo/v001', dir)).version).toBe('v001');
    expect((await findRun('demo/latest', dir)).version).toBe('v002');
    expect((await findRun(join(dir, 'demo', 'v001'), dir)).dir).toBe(join(dir, 'demo', 'v001'));
  });

  test('rejects an unknown name with the nearest one, and a missing version with the ones there are', async () => {
    const dir = runsDir();
    await newRun(dir);
    await expect(findRun('dem', dir)).rejects.toThrow(`no run 'dem' in ${dir} (did you mean 'demo'?)`);
    await expect(findRun('demo/v009', dir)).rejects.toThrow("run 'demo' has no version v009; it has v001");
  });
});
