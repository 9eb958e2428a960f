/**
 * Atomic file writes: write a temporary file beside the target, flush it to disk, then rename
 * it over the target. A reader (or a resumed run) sees the old file or the new one, never half
 * of one, even when the writer is killed.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Replace `path` with `data` atomically. */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  // The temporary name starts with a dot and carries pid + random bytes, so concurrent writers
  // never share one and directory listings of runs skip it.
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** Replace `path` with `value` as pretty JSON (trailing newline), atomically. */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}
