/**
 * A separate process for run-directory tests (run with `node --import tsx`):
 *   create <runsDir> <name> <startAtMs>   wait until startAtMs, create a run, print its version
 *   die <runDir> <file> <at> <bytes>      rewrite one of the run's files through its writer with <bytes> of
 *                                         new content (metrics-rewrite: drop the lines after step 2) and
 *                                         SIGKILL itself at <at> (see dieAt); <file> is manifest, summary,
 *                                         trajectories, metrics-rewrite or metrics-append
 *   hold <runDir>                         take the run's writer lock, print "locked", wait until killed
 *   lock <runDir>                         take the run's writer lock, print "locked" and exit normally
 */
import { Buffer } from 'node:buffer';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { createRunDir, openRunDir, type RunDir } from '../runs/index.js';

const [mode, a, b, c] = process.argv.slice(2);

if (mode === 'create') {
  const startAt = Number(c);
  while (Date.now() < startAt) await new Promise((r) => setTimeout(r, 1));
  const run = await createRunDir({
    runsDir: a!,
    name: b!,
    recipeText: 'name: race\n',
    resolvedYaml: 'name: race\n',
    seed: 0,
  });
  process.stdout.write(`${run.version}\n`);
} else if (mode === 'die') {
  const run = await openRunDir(a!);
  await dieAt(c as 'mid-write' | 'before-rename' | 'never');
  await rewrite(run, b!, 'y'.repeat(Number(process.argv[6])));
  process.stdout.write('wrote\n');
} else if (mode === 'hold' || mode === 'lock') {
  const run = await openRunDir(a!);
  await run.lock();
  process.stdout.write('locked\n');
  if (mode === 'hold') setInterval(() => undefined, 60_000);
}

/**
 * Make this process SIGKILL itself at a chosen point of its next file write, whatever writer the run
 * directory uses: `mid-write` once half the bytes of a write are on disk (any write through a file
 * handle, fs/promises writeFile or appendFile), `before-rename` when a finished file is about to be
 * renamed into place, `never` not at all. The patched functions are node:fs/promises' own, so the
 * code under test runs unchanged.
 */
async function dieAt(at: 'mid-write' | 'before-rename' | 'never'): Promise<void> {
  const die = (): never => {
    process.kill(process.pid, 'SIGKILL');
    throw new Error('unreachable: SIGKILL sent');
  };
  if (at === 'before-rename') fsp.rename = async () => die();
  if (at === 'mid-write') {
    const half = (data: unknown): Buffer => {
      const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data as Uint8Array);
      return bytes.subarray(0, Math.floor(bytes.length / 2));
    };
    const probe = await fsp.open(process.execPath, 'r');
    const handle = Object.getPrototypeOf(probe) as Record<'write' | 'writeFile', (...args: unknown[]) => unknown>;
    await probe.close();
    const { write: handleWrite, writeFile: handleWriteFile } = handle;
    const { writeFile, appendFile } = fsp;
    handle.writeFile = async function (this: unknown, data: unknown) {
      await handleWriteFile.call(this, half(data));
      die();
    };
    handle.write = async function (this: unknown, data: unknown) {
      await handleWrite.call(this, half(data));
      die();
    };
    fsp.writeFile = async (path, data) => {
      await writeFile(path, half(data));
      die();
    };
    fsp.appendFile = async (path, data) => {
      await appendFile(path, half(data));
      die();
    };
  }
  // ESM named imports of node:fs/promises (as in src/runs) see the patched functions only after this.
  syncBuiltinESMExports();
}

/** Rewrite `file` of `run` through its own writer, with `padding` in the new content. */
async function rewrite(run: RunDir, file: string, padding: string): Promise<void> {
  if (file === 'manifest') await run.updateManifest({ padding });
  else if (file === 'summary') await run.writeSummary({ padding });
  else if (file === 'trajectories') await run.writeTrajectories(1, [{ padding }, { padding }]);
  else if (file === 'metrics-rewrite') await run.truncateMetricsAfter(2);
  else if (file === 'metrics-append') await run.appendMetrics({ kind: 'train', step: 3, padding });
  else throw new Error(`unknown file ${file}`);
}
