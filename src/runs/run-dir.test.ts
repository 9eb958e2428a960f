import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readlinkSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, platform, release, totalmem } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { atkVersion, CHECKPOINT_MARKER, createRunDir, findRun, listRuns, openRunDir, sha256, RunDir } from './index.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';

const CHILD = join(projectRoot(), 'src', '__fixtures__', 'run-dir-child.ts');

const runsDir = tempDirs('atk-runs-');

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

describe('RunDir, more', () => {
  test('returns the recipe file and no command in the manifest when given so, and the recipe directory while it exists', async () => {
    const dir = runsDir();
    mkdirSync(join(dir, 'recipes'));
    const recipeFile = join(dir, 'recipes', 'demo.yaml');
    const run = await createRunDir({
      runsDir: dir,
      name: 'demo',
      recipeText: 'a',
      resolvedYaml: 'b',
      seed: 1,
      recipeFile,
    });
    const manifest = await run.manifest();
    expect([manifest.recipe_file, 'command' in manifest]).toStrictEqual([recipeFile, false]);
    expect(await run.recipeDir()).toBe(join(dir, 'recipes'));
    rmSync(join(dir, 'recipes'), { recursive: true });
    expect(await run.recipeDir()).toBeUndefined();
    const bare = await newRun(dir, 'bare');
    expect(['recipe_file' in (await bare.manifest()), await bare.recipeDir()]).toStrictEqual([false, undefined]);
  });

  test('returns the running pid only on a running status, and a history entry without a message key when none is given', async () => {
    const run = await newRun(runsDir());
    await run.updateManifest({ pid: 1 });
    const failed = await run.setStatus('failed');
    expect([failed.pid, failed.status_history.at(-1)]).toStrictEqual([1, { status: 'failed', at: failed.updated_at }]);
    expect((await run.manifest()).pid).toBe(1);
    await run.setStatus('interrupted', 'SIGINT');
    await run.updateManifest({ pid: 1 });
    const resumed = await run.setStatus('running');
    expect([resumed.pid, (await run.manifest()).pid, resumed.finished_at]).toStrictEqual([
      process.pid,
      process.pid,
      undefined,
    ]);
    expect((await run.manifest()).status_history.map((h) => [h.status, h.message])).toStrictEqual([
      ['running', undefined],
      ['failed', undefined],
      ['interrupted', 'SIGINT'],
      ['running', undefined],
    ]);
  });

  test('returns a manifest whose facts replace a mapping with a scalar, null or array, and a scalar with a mapping', async () => {
    const run = await newRun(runsDir());
    await run.updateManifest({ engine: { kind: 'embedded' }, trainer: { pid: 3 }, data: 'x', tokenizer: { a: 1 } });
    await run.updateManifest({ engine: 'none', trainer: null, data: { rows: 2 }, tokenizer: ['a'] });
    const m = await run.manifest();
    expect([m.engine, m.trainer, m.data, m.tokenizer]).toStrictEqual(['none', null, { rows: 2 }, ['a']]);
  });

  test('returns each appended metrics line to every onMetrics listener, in order, after it is on disk', async () => {
    const run = await newRun(runsDir());
    const seen: string[] = [];
    run.onMetrics((line) =>
      seen.push(`a:${line.step}:${readFileSync(run.paths.metrics, 'utf8').split('\n').length - 1}`),
    );
    run.onMetrics((line) => seen.push(`b:${line.step}`));
    await Promise.all([run.appendMetrics({ kind: 'train', step: 1 }), run.appendMetrics({ kind: 'train', step: 2 })]);
    expect(seen).toStrictEqual(['a:1:1', 'b:1', 'a:2:2', 'b:2']);
  });

  test('returns summary.json once written, undefined before, and log paths under logs/', async () => {
    const run = await newRun(runsDir());
    expect(await run.readSummary()).toBeUndefined();
    await run.writeSummary({ reward: 0.5 });
    expect(await run.readSummary()).toStrictEqual({ reward: 0.5 });
    expect(run.logPath('trainer.log')).toBe(join(run.dir, 'logs', 'trainer.log'));
  });

  test('returns no checkpoint and no trajectory steps for a run without them, even without the directories', async () => {
    const run = await newRun(runsDir());
    expect([await run.latestCheckpoint(), await run.trajectorySteps()]).toStrictEqual([undefined, []]);
    rmSync(run.checkpointsDir, { recursive: true });
    rmSync(run.trajectoriesDir, { recursive: true });
    expect([await run.latestCheckpoint(), await run.trajectorySteps()]).toStrictEqual([undefined, []]);
  });

  test('returns steps in numeric order past step 99999, and the newest checkpoint by number, not by name', async () => {
    const run = await newRun(runsDir());
    const steps = [100_000, 7, 99_999, 123_456, 5, 1_000_000, 42, 99_998];
    for (const step of steps) await run.writeTrajectories(step, []);
    expect(await run.trajectorySteps()).toStrictEqual([...steps].sort((a, b) => a - b));
    for (const step of [99_999, 100_000, 99_998]) await run.commitCheckpoint(step, 5);
    expect(await run.latestCheckpoint()).toStrictEqual({ step: 100_000, dir: join(run.checkpointsDir, 'step-100000') });
    await run.commitCheckpoint(100_001, 2);
    expect(readdirSync(run.checkpointsDir).sort()).toStrictEqual(['step-100000', 'step-100001']);
  });

  test('returns only files and checkpoints named exactly step-N, not copies or leftovers beside them', async () => {
    const run = await newRun(runsDir());
    await run.writeTrajectories(3, [{ a: 1 }]);
    for (const name of ['step-00003.jsonl.bak', 'old-step-00004.jsonl', 'step-00005.jsonl.gz'])
      writeFileSync(join(run.trajectoriesDir, name), '{}\n');
    expect(await run.trajectorySteps()).toStrictEqual([3]);
    expect(await run.pruneTrajectories(3, { last: 1 })).toStrictEqual([]);
    // Copies of checkpoint 20 (with its marker) beside it must not count as a second checkpoint 20.
    await run.commitCheckpoint(10, 2);
    await run.commitCheckpoint(20, 2);
    for (const name of ['step-00020.bak', 'old-step-00020', 'step-00030.partial']) {
      mkdirSync(join(run.checkpointsDir, name));
      writeFileSync(join(run.checkpointsDir, name, CHECKPOINT_MARKER), '{}');
    }
    expect(await run.latestCheckpoint()).toStrictEqual({ step: 20, dir: join(run.checkpointsDir, 'step-00020') });
    await run.commitCheckpoint(20, 2);
    expect(readdirSync(run.checkpointsDir).sort()).toStrictEqual([
      'old-step-00020',
      'step-00010',
      'step-00020',
      'step-00020.bak',
      'step-00030.partial',
    ]);
  });

  test('returns a newer incomplete checkpoint untouched by a commit, and drops the committed one when newer complete ones fill keep', async () => {
    const run = await newRun(runsDir());
    await run.commitCheckpoint(10, 1);
    mkdirSync(run.checkpointDir(30)); // a killed save after the one being committed
    await run.commitCheckpoint(20, 1);
    expect(readdirSync(run.checkpointsDir).sort()).toStrictEqual(['step-00020', 'step-00030']);
    await run.commitCheckpoint(30, 1);
    await run.commitCheckpoint(20, 1);
    expect(readdirSync(run.checkpointsDir).sort()).toStrictEqual(['step-00030']);
  });

  test('returns a took-over history entry that says --force for a lock of another host taken with force, and why otherwise', async () => {
    const run = await newRun(runsDir());
    await run.release();
    const elsewhere = { host: `not-${hostname()}`, pid: 4242, started_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(join(run.dir, 'writer.lock'), JSON.stringify(elsewhere));
    const opened = await openRunDir(run.dir);
    await opened.lock({ force: true });
    expect((await opened.manifest()).status_history.at(-1)?.message).toBe(
      `took over the writer lock of atk pid 4242 on not-${hostname()} (started 2026-01-01T00:00:00.000Z) with --force`,
    );
    await opened.release();
    await opened.release();
    const dead = Number((await execa('node', ['-e', 'process.stdout.write(String(process.pid))'])).stdout);
    writeFileSync(join(run.dir, 'writer.lock'), JSON.stringify({ ...elsewhere, host: hostname(), pid: dead }));
    await opened.lock();
    expect((await opened.manifest()).status_history.at(-1)?.message).toBe(
      `took over the writer lock of atk pid ${dead} on ${hostname()} (started 2026-01-01T00:00:00.000Z): that process is gone`,
    );
    await opened.release();
    expect(readdirSync(run.dir)).not.toContain('writer.lock');
    await new RunDir(run.dir).release();
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
    const dir = runsDir();
    const error = await openRunDir(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect([(error as InputError).message, (error as InputError).hint]).toStrictEqual([
      `not a run directory (no manifest.json): ${dir}`,
      'atk runs ls lists the runs',
    ]);
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
