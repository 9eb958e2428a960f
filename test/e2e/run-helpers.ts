/** Helpers for end-to-end tests that drive the built `atk` CLI and read the run directories it writes. */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { projectRoot } from '../../src/util/paths.js';

export const BIN = join(projectRoot(), 'bin', 'atk');

/** A fresh directory for run output. */
export function tempRunsDir(): string {
  return mkdtempSync(join(tmpdir(), 'atk-e2e-'));
}

/** `atk run <recipe>` writing under `runsDir`; resolves with the exit code and output. */
export async function atkRun(args: readonly string[], runsDir: string, timeoutMs = 240_000) {
  return execa('node', [BIN, 'run', ...args, `output.runs_dir=${runsDir}`], {
    reject: false,
    cwd: projectRoot(),
    timeout: timeoutMs,
    env: { CI: 'true' },
  });
}

/** The single run directory under `runsDir/<name>/`. */
export function onlyRun(runsDir: string, name: string): string {
  const versions = readdirSync(join(runsDir, name)).filter((v) => /^v\d+$/.test(v));
  if (versions.length !== 1) throw new Error(`expected one run of ${name}, found ${versions.join(', ')}`);
  return join(runsDir, name, versions[0]!);
}

/** Every line of a JSONL file, parsed (throws on a torn line). */
export function readJsonl(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

/** A Python that can import torch, as the trainer uses; for loading checkpoints in tests. */
export function python(): string {
  return process.env.ATK_PYTHON ?? '/usr/bin/python3';
}

/** Load a checkpoint directory with the trainer's own loader; returns its parameter count. */
export async function loadCheckpoint(dir: string): Promise<number> {
  const code =
    'import sys; from atk_trainer.model.modeling import load_policy; p = load_policy(sys.argv[1], backend="builtin"); print(sum(t.numel() for t in p.module.parameters()))';
  const { stdout } = await execa(python(), ['-c', code, dir], { env: { PYTHONPATH: join(projectRoot(), 'trainer') } });
  return Number(stdout.trim());
}
