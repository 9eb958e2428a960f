import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileSha256 } from './resumable-download.js';

/** What `atk data ls` says about a fetched dataset's files against the checksums it was fetched with. */
export interface PinnedFilesStatus {
  /** `verified`: every file present with its sha256; `missing`: none present; `incomplete`: some absent; `mismatch`: some changed since. */
  readonly state: 'verified' | 'missing' | 'incomplete' | 'mismatch';
  /** One line: counts and the first offending file. */
  readonly detail: string;
}

/** A file a manifest pins: its name under the destination and the sha256 it must have. */
export interface PinnedFile {
  readonly name: string;
  readonly sha256: string;
}

/** Hash each pinned file under `dest` and say whether all are there and unchanged. */
export async function checkPinnedFiles(dest: string, files: readonly PinnedFile[]): Promise<PinnedFilesStatus> {
  const absent = files.filter((f) => !existsSync(join(dest, f.name)));
  if (absent.length === files.length) return { state: 'missing', detail: `none of ${files.length} files` };
  const changed: string[] = [];
  for (const file of files) {
    if (absent.includes(file)) continue;
    if ((await fileSha256(join(dest, file.name))) !== file.sha256) changed.push(file.name);
  }
  if (changed.length > 0)
    return {
      state: 'mismatch',
      detail: `sha256 differs for ${changed.length} of ${files.length} files (first: ${changed[0]})`,
    };
  if (absent.length > 0)
    return {
      state: 'incomplete',
      detail: `${absent.length} of ${files.length} files absent (first: ${absent[0]!.name})`,
    };
  return { state: 'verified', detail: `${files.length} files, sha256 ok` };
}

/** A directory holding something other than partial downloads. */
export function nonEmptyDir(dir: string): boolean {
  return existsSync(dir) && statSync(dir).isDirectory() && readdirSync(dir).some((f) => !f.endsWith('.part'));
}
