/**
 * Run versions `v001, v002, ...` per recipe name, allocated with an atomic `mkdir` so two
 * processes starting the same recipe at once never share a directory, and the `latest` pointer.
 */
import { mkdir, readdir, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const VERSION = /^v(\d{3,})$/;

/** `v001` for 1. */
export function formatVersion(n: number): string {
  return `v${String(n).padStart(3, '0')}`;
}

/** Versions present under `runs/<name>/`, oldest first. */
export async function listVersions(nameDir: string): Promise<string[]> {
  const entries = await readdir(nameDir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isDirectory() && VERSION.test(e.name))
    .map((e) => e.name)
    .sort((a, b) => versionNumber(a) - versionNumber(b));
}

/**
 * Create the next version directory under `nameDir` and return its name. `mkdir` without
 * `recursive` fails with EEXIST when another process took that number first; then the next
 * number is tried, so each caller gets a directory of its own.
 */
export async function allocateVersion(nameDir: string): Promise<string> {
  await mkdir(nameDir, { recursive: true });
  const existing = await listVersions(nameDir);
  let next = existing.length > 0 ? versionNumber(existing[existing.length - 1]!) + 1 : 1;
  for (;;) {
    const version = formatVersion(next);
    try {
      await mkdir(join(nameDir, version));
      return version;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      next++;
    }
  }
}

/**
 * Point `runs/<name>/latest` at the highest version. It is a relative symlink (so `cd
 * runs/quickstart/latest` works), replaced atomically by renaming a new link over it; where
 * symlinks are not allowed it is a text file holding the version name. atk itself resolves a
 * bare run name to the highest version, so a lost race here only makes the link lag.
 */
export async function updateLatest(nameDir: string): Promise<void> {
  const versions = await listVersions(nameDir);
  const newest = versions[versions.length - 1];
  if (!newest) return;
  const temp = join(nameDir, `.latest.${process.pid}.${Date.now()}`);
  try {
    await symlink(newest, temp, 'dir');
  } catch {
    await writeFile(temp, `${newest}\n`);
  }
  try {
    await rename(temp, join(nameDir, 'latest'));
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** The version `latest` names (symlink or file), if any. */
export async function readLatest(nameDir: string): Promise<string | undefined> {
  const path = join(nameDir, 'latest');
  const link = await readlink(path).catch(() => undefined);
  if (link !== undefined) return link;
  const text = await readFile(path, 'utf8').catch(() => undefined);
  return text?.trim() || undefined;
}

/** 3 for `v003`. */
export function versionNumber(version: string): number {
  const match = VERSION.exec(version);
  return match ? Number(match[1]) : -1;
}
