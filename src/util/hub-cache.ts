import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { InputError } from '../errors/index.js';

/** Where huggingface_hub keeps downloads: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub. */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  return join(env.HF_HOME ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'huggingface'), 'hub');
}

/**
 * The local snapshot directory of a hub model id (`Qwen/Qwen2.5-1.5B-Instruct`) that `huggingface-cli
 * download` or vLLM already fetched: the revision `refs/main` names, else the only snapshot with a
 * config.json. Undefined when the model is not in the cache (atk never downloads).
 */
export function hubSnapshotDir(id: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!/^[\w.-]+\/[\w.-]+$/.test(id)) return undefined;
  const repo = join(hubCacheDir(env), `models--${id.replace('/', '--')}`);
  const main = join(repo, 'refs', 'main');
  if (existsSync(main)) {
    const dir = join(repo, 'snapshots', readFileSync(main, 'utf8').trim());
    if (existsSync(join(dir, 'config.json'))) return dir;
  }
  const snapshots = existsSync(join(repo, 'snapshots'))
    ? readdirSync(join(repo, 'snapshots')).map((s) => join(repo, 'snapshots', s))
    : [];
  const complete = snapshots.filter((dir) => existsSync(join(dir, 'config.json')));
  return complete.length === 1 ? complete[0] : undefined;
}

/**
 * The model directory both the trainer and the engines load: model.path when it is a directory (the
 * resolved recipe made it absolute), else the hub id's snapshot in the local Hugging Face cache.
 * @throws InputError when a hub id was never downloaded (the trainer needs the files on disk).
 */
export function localModelDir(path: string, env: NodeJS.ProcessEnv = process.env): string {
  if (isAbsolute(path) && existsSync(path)) return path;
  const cached = hubSnapshotDir(path, env);
  if (cached) return cached;
  throw new InputError(
    `model.path ${path}: not a local directory, and not in the Hugging Face cache (${hubCacheDir(env)})`,
    {
      hint: `download it first: huggingface-cli download ${path} (or point model.path at a local Hugging Face directory)`,
    },
  );
}
