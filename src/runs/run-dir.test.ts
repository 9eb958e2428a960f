import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
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

function runsDir(): string {
  return realpathSync(mkdtempSync(join(tmpdir(), 'atk-runs-')));
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

  test('never leaves a torn manifest, trajectory or metrics line when its writer is killed mid-write', async () => {
    const run = await newRun(runsDir());
    const size = 1024 * 1024;
    // Three kills at arbitrary moments inside the write loop: a non-atomic writer is caught mid-write.
    for (let kill = 0; kill < 3; kill++) {
      const child = spawn('node', ['--import', 'tsx', CHILD, 'churn', run.dir, String(size)], {
        cwd: projectRoot(),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise<void>((resolve) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += String(chunk);
          if (/wrote 2\b/.test(out)) setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 30));
        });
        child.on('exit', () => resolve());
      });
      const manifest = JSON.parse(readFileSync(run.paths.manifest, 'utf8')) as { churn: { padding: string } };
      const records = (await run.readTrajectories(0)) as { round: number; padding: string }[];
      expect(manifest.churn.padding).toHaveLength(size);
      expect(records).toHaveLength(2);
      expect(records.every((r) => r.padding.length === size && r.round === records[0]!.round)).toBe(true);
      await run.truncateMetricsAfter(Number.MAX_SAFE_INTEGER); // what resume does first
    }
    const metrics = await run.readMetrics();
    expect(metrics.length).toBeGreaterThan(0);
    expect(metrics.every((m) => m.kind === 'train' && typeof m.step === 'number')).toBe(true);
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
