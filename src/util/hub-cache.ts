import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

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
  const snapshots = existsSync(join(repo, 'snapshots')) ? readdirSync(join(repo, 'snapshots')).map((s) => join(repo, 'snapshots', s)) : [];
  const complete = snapshots.filter((dir) => existsSync(join(dir, 'config.json')));
  return complete.length === 1 ? complete[0] : undefined;
}
