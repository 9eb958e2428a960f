import { createHash } from 'node:crypto';
import { startFileServer, type FileServer } from './file-server.js';

/** A loopback stand-in for huggingface.co serving one model repository at one commit. */
export interface ModelHub {
  readonly server: FileServer;
  readonly id: string;
  readonly commit: string;
  /** Repository path -> bytes, as served. */
  readonly files: Readonly<Record<string, Buffer>>;
  /** URL path of a file's download. */
  resolvePath(file: string): string;
}

/** The hub's hashes: sha256 for LFS files, git's blob sha1 for the rest. */
export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
export function gitSha1(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

/**
 * Serves `files` of repository `id` as the hub's API does: `/api/models/<id>/revision/main` gives the commit,
 * `/api/models/<id>/tree/<commit>?recursive=true` lists the files in two pages joined by a `Link: rel="next"`
 * header (each with its git oid and, for `lfs` ones, the LFS sha256 and size), `/<id>/resolve/<commit>/<file>`
 * serves them with Range support and the file server's faults.
 */
export async function startModelHub(
  id: string,
  files: Readonly<Record<string, Buffer>>,
  lfs: ReadonlySet<string>,
): Promise<ModelHub> {
  const commit = createHash('sha1').update(id).digest('hex');
  const resolvePath = (file: string): string => `/${id}/resolve/${commit}/${file}`;
  const entries = Object.entries(files).map(([path, bytes]) => ({
    type: 'file',
    path,
    oid: gitSha1(
      lfs.has(path) ? Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(bytes)}\n`) : bytes,
    ),
    size: bytes.length,
    ...(lfs.has(path) ? { lfs: { oid: sha256(bytes), size: bytes.length, pointerSize: 130 } } : {}),
  }));
  const half = Math.ceil(entries.length / 2);
  const tree = `/api/models/${id}/tree/${commit}?recursive=true`;
  const second = `${tree}&cursor=page2`;
  const served: Record<string, Buffer> = {
    [`/api/models/${id}/revision/main`]: Buffer.from(JSON.stringify({ id, sha: commit })),
    [tree]: Buffer.from(JSON.stringify([{ type: 'directory', path: 'extra', oid: commit }, ...entries.slice(0, half)])),
    [second]: Buffer.from(JSON.stringify(entries.slice(half))),
  };
  for (const [path, bytes] of Object.entries(files)) served[resolvePath(path)] = bytes;
  const server = await startFileServer(served, { [tree]: { link: `<${second}>; rel="next"` } });
  return { server, id, commit, files, resolvePath };
}
