import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { copyFile, lstat, mkdir, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { z } from 'zod';
import { downloadResumable, fileSha256, progressLines } from '../datasets/resumable-download.js';
import { InputError, ProviderError } from '../errors/index.js';
import { hubCacheDir } from '../util/hub-cache.js';

export interface HubFetchOptions {
  /** `Org/Name`. */
  readonly id: string;
  /** Branch, tag or commit; default main. */
  readonly revision?: string;
  /** Also copy the files into this directory (the Hugging Face cache keeps them either way). */
  readonly out?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
  readonly print: (line: string) => void;
}

export interface HubFetchSummary {
  /** The snapshot directory in the cache (or `out` when given): what model.path can name. */
  readonly dir: string;
  readonly commit: string;
  readonly files: readonly { readonly path: string; readonly bytes: number; readonly how: 'cached' | 'downloaded' }[];
}

/** The files of a model repository a Hugging Face directory needs: weights, config, tokenizer, template. */
const WANTED = /^(?:[^/]+\.json|[^/]+\.safetensors|[^/]+\.jinja|tokenizer\.model|merges\.txt|vocab\.txt)$/;

const TreeSchema = z.array(
  z.object({
    type: z.string(),
    path: z.string(),
    oid: z.string().optional(),
    size: z.number().int().nonnegative().optional(),
    lfs: z.object({ oid: z.string().regex(/^[0-9a-f]{64}$/), size: z.number().int().nonnegative() }).optional(),
  }),
);
type TreeEntry = z.infer<typeof TreeSchema>[number];

/**
 * Downloads a model repository from the Hugging Face hub ($HF_ENDPOINT, else https://huggingface.co; $HF_TOKEN
 * or the token `huggingface-cli login` saved) into the user's hub cache in huggingface_hub's layout
 * (`models--Org--Name/blobs/<hash>`, `snapshots/<commit>/<file>` links, `refs/<branch>`), so transformers,
 * vLLM and atk find it by id. Only what a model directory needs is fetched (safetensors, JSON, tokenizer,
 * template). Each file is checked against the hub's hash (sha256 for LFS files, the git blob sha1 for the
 * rest); an interrupted LFS download resumes from its `.incomplete` file, as huggingface_hub's does.
 * @throws InputError for an unknown or gated repository, one without safetensors weights, or a hash
 * mismatch; ProviderError when the hub cannot be reached.
 */
export async function fetchHubModel(options: HubFetchOptions): Promise<HubFetchSummary> {
  const env = options.env ?? process.env;
  if (!/^[\w.-]+\/[\w.-]+$/.test(options.id))
    throw new InputError(`${options.id}: not a hub model id (Org/Name)`, {
      hint: 'atk model fetch Qwen/Qwen3-0.6B, or a built-in name (atk model fetch --help)',
    });
  const endpoint = (env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, '');
  const headers = authorization(env);
  const revision = options.revision ?? 'main';
  const info = (await request(`${endpoint}/api/models/${options.id}/revision/${revision}`, headers, options)).body as {
    sha?: unknown;
  };
  if (typeof info.sha !== 'string' || !/^[0-9a-f]{40}$/.test(info.sha))
    throw new ProviderError(`${endpoint}: no commit for ${options.id} at ${revision}`);
  const commit = info.sha;
  const tree = await listTree(`${endpoint}/api/models/${options.id}/tree/${commit}?recursive=true`, headers, options);
  const files = tree.filter((e) => e.type === 'file' && WANTED.test(e.path));
  if (!files.some((f) => f.path.endsWith('.safetensors'))) {
    const gguf = tree.find((e) => e.path.endsWith('.gguf'));
    throw new InputError(`${options.id} has no safetensors weights at ${revision}`, {
      hint: gguf
        ? `it holds GGUF files: download one (e.g. ${gguf.path}) and run atk model import <file.gguf> <dir>`
        : 'atk reads safetensors; pick a repository that has them',
    });
  }
  const repo = join(hubCacheDir(env), `models--${options.id.replace('/', '--')}`);
  const snapshot = join(repo, 'snapshots', commit);
  const fetched: HubFetchSummary['files'][number][] = [];
  for (const file of files) {
    const how = await fetchFile(file, {
      url: `${endpoint}/${options.id}/resolve/${commit}/${file.path}`,
      repo,
      snapshot,
      headers,
      options,
    });
    fetched.push({ path: file.path, bytes: file.lfs?.size ?? file.size ?? 0, how });
  }
  if (revision !== commit) {
    await mkdir(join(repo, 'refs'), { recursive: true });
    await writeFile(join(repo, 'refs', revision), commit);
  }
  if (!options.out) return { dir: snapshot, commit, files: fetched };
  await mkdir(options.out, { recursive: true });
  for (const file of files) {
    await mkdir(dirname(join(options.out, file.path)), { recursive: true });
    await copyFile(join(snapshot, file.path), join(options.out, file.path));
  }
  return { dir: options.out, commit, files: fetched };
}

/** `Authorization: Bearer` from $HF_TOKEN, else the token file huggingface_hub's login writes. */
function authorization(env: NodeJS.ProcessEnv): Record<string, string> {
  const path = env.HF_TOKEN_PATH ?? join(dirname(hubCacheDir(env)), 'token');
  const token = env.HF_TOKEN ?? (existsSync(path) ? readFileSync(path, 'utf8').trim() : undefined);
  return token ? { authorization: `Bearer ${token}` } : {};
}

async function request(
  url: string,
  headers: Record<string, string>,
  options: HubFetchOptions,
): Promise<{ body: unknown; next: string | undefined }> {
  let response: Response;
  try {
    response = await fetch(url, { headers, ...(options.signal ? { signal: options.signal } : {}) });
  } catch (error) {
    throw new ProviderError(`cannot reach the hub at ${new URL(url).origin}: ${(error as Error).message}`, {
      cause: error,
      hint: 'check the network, or set HF_ENDPOINT to a mirror',
    });
  }
  if (response.status === 401 || response.status === 403 || response.status === 404) {
    await response.body?.cancel();
    throw new InputError(`${options.id}: not found on ${new URL(url).origin}, or gated (HTTP ${response.status})`, {
      hint: headers.authorization
        ? 'check the id and revision, and that your token may read it'
        : 'check the id; for a gated or private model set HF_TOKEN',
    });
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new ProviderError(`the hub answered HTTP ${response.status} for ${url}`);
  }
  const next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
  return { body: await response.json(), next };
}

/** Every entry of a repository tree, following the hub's `Link: rel="next"` pages. */
async function listTree(url: string, headers: Record<string, string>, options: HubFetchOptions): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  for (let page: string | undefined = url; page !== undefined; ) {
    const { body, next } = await request(page, headers, options);
    const parsed = TreeSchema.safeParse(body);
    if (!parsed.success) throw new ProviderError(`unexpected file listing from ${page}`);
    entries.push(...parsed.data);
    page = next === undefined ? undefined : new URL(next, page).href;
  }
  return entries;
}

/** One file into the cache's blobs and its snapshot link; 'cached' when the blob was already there and whole. */
async function fetchFile(
  file: TreeEntry,
  where: {
    url: string;
    repo: string;
    snapshot: string;
    headers: Record<string, string>;
    options: HubFetchOptions;
  },
): Promise<'cached' | 'downloaded'> {
  const { options } = where;
  const blobName = file.lfs?.oid ?? file.oid;
  if (!blobName) throw new ProviderError(`the hub listed ${file.path} without a hash`);
  const blob = join(where.repo, 'blobs', blobName);
  const verify = (path: string): Promise<boolean> =>
    file.lfs ? fileSha256(path).then((h) => h === file.lfs!.oid) : gitBlobSha1(path).then((h) => h === file.oid);
  let how: 'cached' | 'downloaded' = 'cached';
  if (!(existsSync(blob) && (await verify(blob)))) {
    how = 'downloaded';
    const size = file.lfs?.size ?? file.size;
    await downloadResumable({
      url: where.url,
      dest: blob,
      ...(file.lfs ? { sha256: file.lfs.oid } : {}),
      ...(size === undefined ? {} : { bytes: size }),
      headers: where.headers,
      partPath: `${blob}.incomplete`,
      ...(options.signal ? { signal: options.signal } : {}),
      onProgress: progressLines(file.path, size, options.print),
    });
    if (!file.lfs && !(await verify(blob))) {
      await rm(blob, { force: true });
      throw new InputError(`${file.path} of ${options.id} does not have the git hash the hub lists (${file.oid})`, {
        hint: 'the file changed in transit or at the source; nothing was kept, run again to retry',
      });
    }
  }
  const link = join(where.snapshot, file.path);
  await mkdir(dirname(link), { recursive: true });
  if (await lstat(link).catch(() => undefined)) await unlink(link);
  await symlink(relative(dirname(link), blob), link);
  options.print(
    `${file.path}: ${how === 'cached' ? 'cached' : `${((await stat(blob)).size / 1e6).toFixed(1)} MB`}, hash ok`,
  );
  return how;
}

/** git's object id of a file: sha1 of `blob <size>\0` and the bytes (what the hub lists for non-LFS files). */
export async function gitBlobSha1(path: string): Promise<string> {
  const hash = createHash('sha1').update(`blob ${(await stat(path)).size}\0`);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
