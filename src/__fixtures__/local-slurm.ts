// A real two-node Slurm cluster on this machine for tests (../shared/notes/slurm-local.md): a private
// munged, one slurmctld and two slurmd daemons acting as nodes n1 and n2, all in a private temp
// directory with free ports, so test runs never share a controller. stop() ends every daemon by pid.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { freePort } from '../util/free-port.js';
import { alive } from './engine-processes.js';

const BINARIES = ['munged', 'slurmctld', 'slurmd', 'srun', 'salloc', 'squeue', 'scancel', 'scontrol', 'sinfo'];

/** The Slurm/munge binaries missing on this machine; empty when a local cluster can start. */
export function missingSlurmBinaries(): string[] {
  const path = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin'];
  return BINARIES.filter((b) => !path.some((dir) => dir && existsSync(join(dir, b))));
}

/** A running local cluster: its private directory, the environment its clients need, and stop(). */
export interface LocalSlurm {
  readonly dir: string;
  /** SLURM_CONF (and PATH with sbin) for srun/salloc/squeue and for atk started under them. */
  readonly env: Readonly<Record<string, string>>;
  readonly nodes: readonly ['n1', 'n2'];
  /** Kills munged, slurmctld and both slurmd by the pids in their pid files, then removes the directory. */
  stop(): Promise<void>;
}

/**
 * Starts munged, slurmctld and slurmd n1/n2 (one CPU each) and waits (at most 30 s) until sinfo shows
 * both nodes idle. Must run as root (SlurmdUser=root), as the CI machine does.
 * @throws Error quoting the daemon logs when the cluster does not come up.
 */
export async function startLocalSlurm(): Promise<LocalSlurm> {
  const dir = mkdtempSync(join(tmpdir(), 'atk-slurm-'));
  // munged refuses a socket directory others cannot enter.
  chmodSync(dir, 0o755);
  const key = join(dir, 'munge.key');
  writeFileSync(key, randomBytes(1024));
  chmodSync(key, 0o400);
  const env = { SLURM_CONF: join(dir, 'slurm.conf'), PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` };
  const pidFiles = ['munged.pid', 'slurmctld.pid', 'slurmd-n1.pid', 'slurmd-n2.pid'].map((f) => join(dir, f));
  const stop = async (): Promise<void> => {
    const pids = pidFiles.map((f) => Number(existsSync(f) ? readFileSync(f, 'utf8').trim() : 0)).filter((p) => p > 0);
    for (const pid of pids) signal(pid, 'SIGTERM');
    for (let waited = 0; waited < 10_000 && pids.some(alive); waited += 100) await sleep(100);
    for (const pid of pids.filter(alive)) signal(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    execFileSync(
      'munged',
      [
        '--force',
        `--socket=${join(dir, 'munge.sock')}`,
        `--key-file=${key}`,
        `--pid-file=${pidFiles[0]}`,
        `--log-file=${join(dir, 'munged.log')}`,
        `--seed-file=${join(dir, 'munged.seed')}`,
        '--num-threads=1',
      ],
      { env: { ...process.env, ...env } },
    );
    const [ctld, n1, n2] = [await freePort(), await freePort(), await freePort()];
    mkdirSync(join(dir, 'state'));
    writeFileSync(env.SLURM_CONF, slurmConf(dir, ctld, n1, n2));
    const daemonEnv = { ...process.env, ...env };
    execFileSync('slurmctld', [], { env: daemonEnv });
    execFileSync('slurmd', ['-N', 'n1'], { env: daemonEnv });
    execFileSync('slurmd', ['-N', 'n2'], { env: daemonEnv });
    for (let waited = 0; ; waited += 250) {
      const info = await execa('sinfo', ['-h', '-o', '%t %D'], { env, reject: false });
      if (info.stdout.trim() === 'idle 2') break;
      if (waited > 30_000)
        throw new Error(
          `local slurm: nodes not idle after 30 s (sinfo: ${info.stdout.trim() || info.stderr.trim()})\n${logs(dir)}`,
        );
      await sleep(250);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { dir, env, nodes: ['n1', 'n2'], stop };
}

function slurmConf(dir: string, ctldPort: number, n1Port: number, n2Port: number): string {
  const host = hostname().split('.')[0];
  return `ClusterName=atktest
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${ctldPort}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${join(dir, 'munge.sock')}
StateSaveLocation=${join(dir, 'state')}
SlurmctldPidFile=${join(dir, 'slurmctld.pid')}
SlurmctldLogFile=${join(dir, 'ctld.log')}
SlurmdPidFile=${join(dir, 'slurmd-%n.pid')}
SlurmdSpoolDir=${join(dir, 'spool-%n')}
SlurmdLogFile=${join(dir, 'd-%n.log')}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=n1 NodeHostname=${host} NodeAddr=127.0.0.1 Port=${n1Port} CPUs=1 RealMemory=4000
NodeName=n2 NodeHostname=${host} NodeAddr=127.0.0.1 Port=${n2Port} CPUs=1 RealMemory=4000
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
`;
}

function logs(dir: string): string {
  return ['munged.log', 'ctld.log', 'd-n1.log', 'd-n2.log']
    .map((f) => join(dir, f))
    .filter(existsSync)
    .map((f) => `--- ${f}\n${readFileSync(f, 'utf8').split('\n').slice(-10).join('\n')}`)
    .join('\n');
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone
  }
}
