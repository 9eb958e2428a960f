import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CancelledError, InputError, ProviderError } from '../errors/index.js';

/** One file to fetch, with the checksum it must have when one is known. */
export interface ResumableDownloadRequest {
  readonly url: string;
  readonly dest: string;
  /** Without it the file is taken as it arrives (its sha256 is returned), and never resumed: nothing could tell a stale `.part`. */
  readonly sha256?: string;
  /** Expected size; lets a complete `.part` skip the request and gives progress a total. */
  readonly bytes?: number;
  readonly signal?: AbortSignal;
  /** Request headers, e.g. a hub token (fetch drops an Authorization header when a redirect leaves the origin). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Where the partial file goes (default `dest.part`): the Hugging Face cache keeps `<blob>.incomplete`, which huggingface_hub resumes too. */
  readonly partPath?: string;
  /** Called after every received chunk (callers throttle what they print). */
  readonly onProgress?: (progress: DownloadProgress) => void;
}

export interface DownloadProgress {
  readonly received: number;
  readonly total: number | undefined;
  /** Bytes already in the `.part` file that this attempt continued from. */
  readonly resumedFrom: number;
}

export interface DownloadOutcome {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
  /** `cached`: dest already had the checksum; `resumed`: continued a `.part` file; `fresh`: from byte 0. */
  readonly how: 'cached' | 'resumed' | 'fresh';
}

/**
 * Downloads `url` into `dest` via `dest.part`: continues an existing `.part` with an HTTP Range
 * request (restarting when the server ignores it), checks the sha256 of the whole file, and only
 * then renames it into place, so `dest` is always complete and verified. An interrupted transfer
 * keeps its `.part` for the next attempt; a corrupted one is deleted.
 * @throws ProviderError on network/HTTP failures (the `.part` is kept); InputError on a checksum
 * mismatch (nothing is kept); CancelledError when `signal` aborts.
 */
export async function downloadResumable(request: ResumableDownloadRequest): Promise<DownloadOutcome> {
  const { url, dest, sha256 } = request;
  if (sha256 !== undefined && (await sizeOf(dest)) !== undefined && (await fileSha256(dest)) === sha256) {
    return { path: dest, bytes: (await sizeOf(dest))!, sha256, how: 'cached' };
  }
  await mkdir(dirname(dest), { recursive: true });
  const part = request.partPath ?? `${dest}.part`;
  let offset = sha256 === undefined ? 0 : ((await sizeOf(part)) ?? 0);
  if (request.bytes !== undefined && offset > request.bytes) offset = 0;
  let resumedFrom = offset;
  if (request.bytes === undefined || offset < request.bytes)
    ({ size: offset, resumedFrom } = await transfer(request, part, offset));
  const actual = await fileSha256(part);
  if (sha256 !== undefined && actual !== sha256) {
    await rm(part, { force: true });
    throw new InputError(`checksum mismatch for ${url}: expected sha256 ${sha256}, got ${actual}`, {
      hint: 'the file was corrupted in transit or changed at the source; nothing was kept, run again to retry',
    });
  }
  await rename(part, dest);
  return { path: dest, bytes: offset, sha256: actual, how: resumedFrom > 0 ? 'resumed' : 'fresh' };
}

/** GET the rest of the file into `part` from `offset`; returns the final size and where it really continued from. */
async function transfer(
  request: ResumableDownloadRequest,
  part: string,
  offset: number,
): Promise<{ size: number; resumedFrom: number }> {
  const { url, signal } = request;
  let response: Response;
  try {
    response = await fetch(url, {
      signal,
      redirect: 'follow',
      headers: { ...request.headers, ...(offset > 0 ? { range: `bytes=${offset}-` } : {}) },
    });
  } catch (error) {
    throw failure(error, signal, `download of ${url} failed: ${(error as Error).message}`);
  }
  if (response.status === 416 && offset > 0) {
    // The server has nothing past `offset`: the part is already whole (the checksum decides).
    await response.body?.cancel();
    return { size: offset, resumedFrom: offset };
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new ProviderError(`download of ${url} failed: HTTP ${response.status}`, {
      hint: 'check the URL (--base-url) and the network',
    });
  }
  // A 200 to a Range request (or a 206 starting elsewhere) means starting over.
  if (response.status !== 206 || contentRangeStart(response) !== offset) offset = 0;
  const resumedFrom = offset;
  const total = totalSize(response, offset) ?? request.bytes;
  const file = await open(part, offset > 0 ? 'a' : 'w');
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      await file.write(chunk);
      offset += chunk.length;
      request.onProgress?.({ received: offset, total, resumedFrom });
    }
  } catch (error) {
    throw failure(
      error,
      signal,
      `download of ${url} interrupted after ${offset} bytes (${(error as Error).message}); run again to resume`,
    );
  } finally {
    await file.close();
  }
  return { size: offset, resumedFrom };
}

function failure(error: unknown, signal: AbortSignal | undefined, message: string): Error {
  if (signal?.aborted) return new CancelledError('download cancelled', { cause: error });
  return new ProviderError(message, {
    cause: error,
    hint: 'check the network or use --base-url for a mirror; the partial file is kept',
  });
}

function contentRangeStart(response: Response): number | undefined {
  const match = /^bytes (\d+)-\d+\/(?:\d+|\*)$/.exec(response.headers.get('content-range') ?? '');
  return match ? Number(match[1]) : undefined;
}

function totalSize(response: Response, offset: number): number | undefined {
  const range = /\/(\d+)$/.exec(response.headers.get('content-range') ?? '');
  if (range) return Number(range[1]);
  const length = response.headers.get('content-length');
  return length === null ? undefined : offset + Number(length);
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}

/** sha256 of a file, streamed. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * A `downloadResumable` progress callback that says where a resumed download continued from and
 * then one line per tenth of `name` received, e.g. `train.jsonl: 40% of 4.2 MB`.
 */
export function progressLines(
  name: string,
  expectedBytes: number | undefined,
  say: (line: string) => void,
): (progress: DownloadProgress) => void {
  let shown = -1;
  return ({ received, total, resumedFrom }) => {
    const size = total ?? expectedBytes;
    if (shown < 0 && resumedFrom > 0)
      say(`${name}: resuming at ${megabytes(resumedFrom)}${size === undefined ? '' : ` of ${megabytes(size)}`}`);
    const tenth = size === undefined || size === 0 ? 0 : Math.floor((10 * received) / size);
    if (tenth === shown) return;
    shown = tenth;
    say(size === undefined ? `${name}: downloading` : `${name}: ${Math.min(100, tenth * 10)}% of ${megabytes(size)}`);
  };
}

/** Bytes as megabytes with one decimal, e.g. `4.2 MB`. */
function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}
