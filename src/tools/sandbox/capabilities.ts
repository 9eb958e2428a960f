import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { runProgram, type SandboxHost } from './run.js';

/** What this machine offers for sandboxing model-written code (`atk doctor` prints it). */
export interface SandboxCapabilities {
  /** A bwrap binary was found. */
  readonly bwrap: boolean;
  /** bwrap could create its namespaces here and run Python inside them (the real configuration). */
  readonly namespaces: boolean;
  /** One line saying what was found and, when something is missing, why and what to do. */
  readonly detail: string;
}

const probes = new Map<string, Promise<SandboxCapabilities>>();

/** Which interpreter and bwrap binary to probe; defaults as in `defaultPython` and `findExecutable`. */
export interface SandboxProbeOptions {
  readonly python?: string;
  /** bwrap binary; default $ATK_BWRAP, else bwrap on the PATH. */
  readonly bwrap?: string;
}

/**
 * Probes once per (python, bwrap) pair (cached): finds bwrap and prlimit and runs a trivial
 * program in exactly the configuration real runs use, as the uid they would use. Never throws.
 */
export function sandboxCapabilities(options: SandboxProbeOptions = {}): Promise<SandboxCapabilities> {
  const python = options.python ?? defaultPython();
  const bwrap = options.bwrap ?? process.env.ATK_BWRAP;
  const key = `${python}\0${bwrap ?? ''}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = probeHost(python, bwrap);
    probes.set(key, probe);
  }
  return probe;
}

/** The interpreter sandboxed programs run with: $ATK_SANDBOX_PYTHON, else /usr/bin/python3. */
export function defaultPython(): string {
  return process.env.ATK_SANDBOX_PYTHON ?? '/usr/bin/python3';
}

/** Finds an executable: an explicit override, else the PATH, else /usr/bin and /bin. */
export function findExecutable(name: string, override?: string): string | undefined {
  const candidates = override
    ? [override]
    : [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/bin', '/bin'].map((d) => join(d, name));
  return candidates.find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The uid a probe or slot 0 runs as; see `slotUid`. */
export function probeUid(): number | undefined {
  return slotUid(0);
}

/**
 * When atk runs as root, each pool slot runs as its own unused uid, so RLIMIT_NPROC (which
 * root ignores) caps that slot's processes, the program cannot signal atk or other slots, and
 * leftovers are found by uid. The uid range is derived from atk's pid so that concurrent atk
 * processes on one host never share a uid. As a normal user the program keeps the user's uid.
 */
export function slotUid(slot: number): number | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const base = Number(process.env.ATK_SANDBOX_UID_BASE ?? 1_000_000_000);
  return base + process.pid * 128 + (slot % 128);
}

async function probeHost(python: string, bwrapOverride: string | undefined): Promise<SandboxCapabilities> {
  const bwrap = findExecutable('bwrap', bwrapOverride);
  const prlimit = findExecutable('prlimit');
  if (!prlimit)
    return {
      bwrap: bwrap !== undefined,
      namespaces: false,
      detail: 'prlimit (util-linux) not found: sandboxed code cannot be limited',
    };
  if (!bwrap)
    return {
      bwrap: false,
      namespaces: false,
      detail: 'bwrap not found: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)',
    };
  const host: SandboxHost = { isolation: 'bwrap', bwrap, prlimit, python };
  try {
    const uid = probeUid();
    const result = await runProgram(
      { code: 'print("ok")', limits: { wallMs: 10_000 } },
      host,
      uid === undefined ? {} : { uid },
    );
    if (result.status === 'ok' && result.stdout === 'ok\n')
      return { bwrap: true, namespaces: true, detail: `bwrap at ${bwrap}: namespaces work (${python})` };
    const why = (result.stderr.trim().split('\n').at(-1) ?? '') || result.status;
    return { bwrap: true, namespaces: false, detail: `bwrap at ${bwrap} cannot create namespaces here: ${why}` };
  } catch (error) {
    return { bwrap: true, namespaces: false, detail: `bwrap probe failed: ${(error as Error).message}` };
  }
}
