/**
 * manifest.json: what a run is and where it ran. Written before anything runs; later parts add
 * their facts (engine, trainer, dataset and tokenizer hashes) with `RunDir.updateManifest`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { arch, cpus, hostname, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { projectRoot } from '../util/paths.js';

export type RunStatus = 'running' | 'finished' | 'failed' | 'interrupted';

/** The manifest's fixed fields; other parts add keys of their own. */
export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly status: RunStatus;
  /** ISO timestamps. `finished_at` is set when the status becomes finished, failed or interrupted. */
  readonly started_at: string;
  readonly updated_at: string;
  readonly finished_at?: string;
  /** Every status change, oldest first (a resumed run shows running again). */
  readonly status_history: readonly { readonly status: RunStatus; readonly at: string; readonly message?: string }[];
  readonly seed: number;
  /** sha256 of resolved.yaml: equal hashes mean equal settings. */
  readonly recipe_sha256: string;
  readonly recipe_file?: string;
  readonly command?: readonly string[];
  readonly atk_version: string;
  readonly node_version: string;
  /** The git commit of the directory atk ran in, if it is a repository. */
  readonly git: { readonly commit: string; readonly dirty: boolean } | null;
  readonly host: {
    readonly hostname: string;
    readonly os: string;
    readonly arch: string;
    readonly cpus: number;
    readonly cpu_model: string;
    readonly memory_bytes: number;
  };
  /** Process that writes the run; `atk runs ls` uses it to spot a run whose process is gone. */
  readonly pid: number;
  readonly [fact: string]: unknown;
}

/** What the caller knows when a run starts. */
export interface ManifestFacts {
  readonly name: string;
  readonly version: string;
  readonly seed: number;
  readonly resolvedYaml: string;
  readonly recipeFile?: string;
  readonly command?: readonly string[];
  /** Directory whose git commit is recorded; default: the current directory. */
  readonly cwd?: string;
}

/** A new manifest with status running. */
export async function buildManifest(facts: ManifestFacts): Promise<Manifest> {
  const now = new Date().toISOString();
  const cpuList = cpus();
  return {
    name: facts.name,
    version: facts.version,
    status: 'running',
    started_at: now,
    updated_at: now,
    status_history: [{ status: 'running', at: now }],
    seed: facts.seed,
    recipe_sha256: sha256(facts.resolvedYaml),
    ...(facts.recipeFile !== undefined && { recipe_file: facts.recipeFile }),
    ...(facts.command !== undefined && { command: facts.command }),
    atk_version: atkVersion(),
    node_version: process.version,
    git: await gitState(facts.cwd ?? process.cwd()),
    host: {
      hostname: hostname(),
      os: `${platform()} ${release()}`,
      arch: arch(),
      cpus: cpuList.length,
      cpu_model: cpuList[0]?.model.trim() ?? 'unknown',
      memory_bytes: totalmem(),
    },
    pid: process.pid,
  };
}

/** Hex sha256 of a text. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

let version: string | undefined;

/** The atk package version. */
export function atkVersion(): string {
  version ??= (JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}

async function gitState(cwd: string): Promise<Manifest['git']> {
  const head = await execa('git', ['rev-parse', 'HEAD'], { cwd, reject: false, timeout: 10_000 });
  if (head.exitCode !== 0) return null;
  const status = await execa('git', ['status', '--porcelain', '--untracked-files=no'], {
    cwd,
    reject: false,
    timeout: 10_000,
  });
  return { commit: String(head.stdout).trim(), dirty: String(status.stdout).trim() !== '' };
}
