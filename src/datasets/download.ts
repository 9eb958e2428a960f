import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { InputError, ProviderError } from '../errors/index.js';

/** A finished download. */
export interface DownloadedFile {
  readonly path: string;
  readonly sha256: string;
  readonly bytes: number;
}

/**
 * Streams `url` to `dest` through a `.part` file, hashing as it goes, and renames it into place
 * only when complete and (if `sha256` is given) matching — a killed or corrupted download never
 * leaves a file that looks finished.
 * @throws ProviderError on an HTTP or network failure; InputError on a checksum mismatch.
 */
export async function downloadFile(url: string, dest: string, options: { sha256?: string; signal?: AbortSignal } = {}): Promise<DownloadedFile> {
  let response: Response;
  try {
    response = await fetch(url, { signal: options.signal, redirect: 'follow' });
  } catch (error) {
    throw new ProviderError(`download of ${url} failed: ${(error as Error).message}`, { cause: error, hint: 'check the network, or set a mirror with --base-url / $HF_ENDPOINT' });
  }
  if (!response.ok || !response.body) throw new ProviderError(`download of ${url} failed: HTTP ${response.status}`, { hint: 'check the URL, revision and access to the dataset' });
  await mkdir(dirname(dest), { recursive: true });
  const part = `${dest}.part`;
  const hash = createHash('sha256');
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), counter, createWriteStream(part));
  } catch (error) {
    await rm(part, { force: true });
    throw new ProviderError(`download of ${url} was interrupted: ${(error as Error).message}`, { cause: error });
  }
  const sha256 = hash.digest('hex');
  if (options.sha256 && options.sha256 !== sha256) {
    await rm(part, { force: true });
    throw new InputError(`checksum mismatch for ${url}: expected sha256 ${options.sha256}, got ${sha256}`, { hint: 'the file changed upstream or was corrupted in transit; nothing was kept' });
  }
  await rename(part, dest);
  return { path: dest, sha256, bytes };
}

/**
 * GETs JSON from `url`.
 * @throws ProviderError on an HTTP or network failure or a body that is not JSON.
 */
export async function fetchJson(url: string, signal?: AbortSignal): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { signal });
  } catch (error) {
    throw new ProviderError(`request to ${url} failed: ${(error as Error).message}`, { cause: error });
  }
  if (!response.ok) throw new ProviderError(`request to ${url} failed: HTTP ${response.status}`);
  try {
    return await response.json();
  } catch (error) {
    throw new ProviderError(`response of ${url} is not JSON`, { cause: error });
  }
}
