import { readFileSync } from 'node:fs';
import { execa } from 'execa';
import { findPython } from '../trainer/find-python.js';
import { DEV_PACKAGES, RUNTIME_PACKAGES, type MachineFacts } from './plan.js';

/** Probe this machine for what `setupPlan` needs to know. Never throws. */
export async function probeMachine(): Promise<MachineFacts> {
  const [onPath, installedPackages, python] = await Promise.all([
    executables(['apt-get', 'sudo', 'python3', 'bwrap', 'tmux']),
    debianPackages([...RUNTIME_PACKAGES, ...DEV_PACKAGES]),
    findPython(),
  ]);
  const pytest = python.info
    ? (await execa(python.info.python, ['-c', 'import pytest'], { reject: false })).exitCode === 0
    : false;
  return {
    osIds: osIds(),
    isRoot: process.getuid?.() === 0,
    onPath,
    installedPackages,
    torch: python.info !== null,
    pytest,
  };
}

function osIds(): string[] {
  try {
    const text = readFileSync('/etc/os-release', 'utf8');
    const value = (key: string): string => text.match(new RegExp(`^${key}=("?)([^"\\n]*)\\1$`, 'm'))?.[2] ?? '';
    return [...value('ID').split(' '), ...value('ID_LIKE').split(' ')].filter(Boolean);
  } catch {
    return [];
  }
}

async function executables(names: readonly string[]): Promise<Set<string>> {
  const found = await Promise.all(
    names.map(async (name) =>
      (await execa('sh', ['-c', `command -v ${name}`], { reject: false })).exitCode === 0 ? name : undefined,
    ),
  );
  return new Set(found.filter((n): n is string => n !== undefined));
}

/** Which of `names` dpkg says are installed (none where there is no dpkg). */
export async function debianPackages(names: readonly string[]): Promise<Set<string>> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format fields
  const result = await execa('dpkg-query', ['-W', '-f', '${Package} ${db:Status-Status}\\n', ...names], {
    reject: false,
  });
  if (result.failed && result.code === 'ENOENT') return new Set();
  return new Set(
    String(result.stdout)
      .split('\n')
      .map((line) => line.split(' '))
      .filter(([, status]) => status === 'installed')
      .map(([name]) => name!),
  );
}

/** nvidia-smi's CSV, one `name, memory.total, driver_version` line per GPU; null when it is missing or fails. */
export async function nvidiaSmi(): Promise<string | null> {
  const smi = await execa('nvidia-smi', ['--query-gpu=name,memory.total,driver_version', '--format=csv,noheader'], {
    reject: false,
    timeout: 30_000,
  });
  return smi.exitCode === 0 ? String(smi.stdout) : null;
}

/**
 * How many GPUs this machine gives atk: nvidia-smi's count (in a container, the ones it was given), 0
 * without nvidia-smi. The recipe's GPU indices are these GPUs' (atk sets CUDA_VISIBLE_DEVICES to them).
 */
export async function gpuCount(probe: () => Promise<string | null> = nvidiaSmi): Promise<number> {
  return (await probe())?.trim().split('\n').filter(Boolean).length ?? 0;
}
