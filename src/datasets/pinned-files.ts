import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { type DownloadOutcome, downloadResumable, fileSha256, progressLines } from './resumable-download.js';

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

/**
 * The shape every shipped pinned-files manifest shares (`datasets/<name>/manifest.json`): the
 * repository and commit the files are taken at, their licence, the canonical host, and per file
 * its name under the destination, its size and sha256; `fileFields` adds what one dataset pins more.
 */
export function pinnedManifestSchema<Dataset extends string, Extra extends z.ZodRawShape>(
  dataset: Dataset,
  fileFields: Extra,
) {
  return z.object({
    dataset: z.literal(dataset),
    repository: z.string(),
    revision: z.string().regex(/^[0-9a-f]{40}$/),
    license: z.string(),
    base_url: z.string().url(),
    files: z
      .array(
        z.object({
          name: z.string().min(1),
          bytes: z.number().int().positive(),
          sha256: z.string().regex(/^[0-9a-f]{64}$/),
          ...fileFields,
        }),
      )
      .min(1),
  });
}

/** A directory holding something other than partial downloads. */
export function nonEmptyDir(dir: string): boolean {
  return existsSync(dir) && statSync(dir).isDirectory() && readdirSync(dir).some((f) => !f.endsWith('.part'));
}

/**
 * Reads a shipped dataset manifest and checks it against `schema`.
 * @throws InputError naming the file when it is missing, not JSON, or malformed (every issue, by key).
 */
export function readManifest<Schema extends z.ZodTypeAny>(
  path: string,
  schema: Schema,
  dataset: string,
): z.infer<Schema> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new InputError(`cannot read the ${dataset} manifest ${path}: ${(error as Error).message}`, { cause: error });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new InputError(
      `${path}: ${parsed.error.issues.map((i: z.ZodIssue) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** A manifest file with a known size, as fetched into `dest/<name>`. */
export interface SizedPinnedFile extends PinnedFile {
  readonly bytes: number;
}

/**
 * Downloads one pinned file from `url` into `dest/<name>`, resumable through its `.part` and
 * renamed into place only when its sha256 matches, reporting progress under its name.
 */
export async function downloadPinnedFile(
  file: SizedPinnedFile,
  url: string,
  dest: string,
  say: (line: string) => void,
  signal?: AbortSignal,
): Promise<{ readonly path: string; readonly how: DownloadOutcome['how'] }> {
  const path = join(dest, file.name);
  const outcome = await downloadResumable({
    url,
    dest: path,
    sha256: file.sha256,
    bytes: file.bytes,
    ...(signal ? { signal } : {}),
    onProgress: progressLines(file.name, file.bytes, say),
  });
  return { path, how: outcome.how };
}
