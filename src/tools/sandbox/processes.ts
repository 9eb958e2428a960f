import { readdirSync, readFileSync } from 'node:fs';

/** Pids of the live processes whose real uid is `uid` (from /proc; empty where /proc is missing). */
export function processesOfUid(uid: number): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const real = /^Uid:\s+(\d+)/m.exec(status);
      if (real && Number(real[1]) === uid) pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

/** SIGKILLs every process of `uid`: used only for uids atk reserved for one sandbox slot. */
export function killProcessesOfUid(uid: number): void {
  for (const pid of processesOfUid(uid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Direct children of `pid` (from /proc; empty where unavailable). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
