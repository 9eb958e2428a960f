import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, test } from 'vitest';
import { newRecipeRun, reopenRecipeRun } from '../cli/recipe-run.js';
import { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { LOCK_FILE, lockRunDir } from './run-lock.js';

const CHILD = join(projectRoot(), 'src', '__fixtures__', 'run-dir-child.ts');
const CLI = join(projectRoot(), 'src', '__fixtures__', 'atk-cli.ts');
const root = mkdtempSync(join(tmpdir(), 'atk-run-lock-'));
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(root, { recursive: true, force: true });
});

/** A fresh run directory of the smoke recipe, its lock released by this process. */
async function freshRun(name: string): Promise<string> {
  const { run } = await newRecipeRun('recipes/smoke/quickstart.yaml', [`output.runs_dir=${join(root, name)}`]);
  expect(existsSync(join(run.dir, LOCK_FILE))).toBe(true);
  await run.release();
  return run.dir;
}

/** A second process holding the run's writer lock until it is killed. */
async function holder(dir: string): Promise<ChildProcess> {
  const child = spawn('node', ['--import', 'tsx', CHILD, 'hold', dir], {
    cwd: projectRoot(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => String(chunk).includes('locked') && resolve());
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

describe('run directory writer lock', () => {
  test('rejects atk run --resume while another process writes the run (exit 2, one line naming it), then takes over once it is SIGKILLed', async () => {
    const dir = await freshRun('live');
    const first = await holder(dir);
    const refused = await execa('node', ['--import', 'tsx', CLI, 'run', '--resume', dir, '--no-tui'], {
      cwd: projectRoot(),
      reject: false,
      env: { CI: 'true' },
    });
    const started = (JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as { started_at: string }).started_at;
    expect([refused.exitCode, String(refused.stderr).split('\n')[0]]).toStrictEqual([
      2,
      `run directory ${dir} is being written by atk pid ${first.pid} on this host (started ${started})`,
    ]);
    await expect(reopenRecipeRun(dir, [])).rejects.toBeInstanceOf(InputError);

    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    const { run } = await reopenRecipeRun(dir, []);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({
      host: hostname(),
      pid: process.pid,
    });
    expect((await run.manifest()).status_history.at(-1)?.message).toBe(
      `took over the writer lock of atk pid ${first.pid} on ${hostname()} (started ${started}): that process is gone`,
    );
    await run.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  }, 60_000);

  test('returns no lock left after a writer exits normally', async () => {
    const dir = await freshRun('normal');
    const done = await execa('node', ['--import', 'tsx', CHILD, 'lock', dir], { cwd: projectRoot() });
    expect([String(done.stdout).trim(), existsSync(join(dir, LOCK_FILE))]).toStrictEqual(['locked', false]);
  });

  test('rejects a lock held on another host unless forced, and takes over a reused pid whose start time differs', async () => {
    const dir = await freshRun('hosts');
    const elsewhere = { host: 'gpu-node-7', pid: 4242, started_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify(elsewhere));
    await expect(lockRunDir(dir)).rejects.toThrow(
      `run directory ${dir} is locked by atk pid 4242 on host gpu-node-7 (started 2026-01-01T00:00:00.000Z)`,
    );
    const forced = await lockRunDir(dir, { force: true });
    expect(forced.tookOver).toStrictEqual(elsewhere);
    await forced.release();
    // The parent of this process is alive, but it did not start in 2001: its pid was reused.
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({ host: hostname(), pid: process.ppid, started_at: '2001-01-01T00:00:00.000Z' }),
    );
    const reused = await lockRunDir(dir);
    expect(reused.tookOver?.pid).toBe(process.ppid);
    await reused.release();
  });
});
