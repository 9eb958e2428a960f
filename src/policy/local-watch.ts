/**
 * The processes a policy started on this machine (engine replicas, and the trainer, which also serves the
 * embedded engine), watched for the whole run: one that exits, or stops answering its health checks, ends
 * the run within seconds with its log's last lines, instead of every later episode failing one by one.
 */
import { logTail, withLogTail } from '../engines/launch/index.js';
import { ProviderError } from '../errors/index.js';
import type { ClusterConfig } from '../recipe/cluster-schema.js';
import { guardPolicy } from './policy-guard.js';
import type { RunningPolicy } from './policy.js';
import type { TrainerProcess } from '../trainer/index.js';

/** A process the policy started here: it must not end, and must keep answering `healthPath`, until close(). */
export interface LocalProcess {
  /** How messages name it: `vllm engine`, `sglang engine replica 1`, `trainer`. */
  readonly component: string;
  readonly logFile: string;
  /** Resolves with the exit code (null when killed by a signal) once it has exited. */
  readonly exited: Promise<number | null>;
  readonly baseUrl: string;
  readonly healthPath: string;
}

const HINT =
  'the log lines above say why it ended; once that is fixed, --resume continues (atk run from its last checkpoint, atk eval from its finished episodes)';

/**
 * `policy` whose trainer calls and syncs fail, and whose `lost` rejects, once one of `processes` ends or
 * leaves `cluster.heartbeat_misses` health checks in a row unanswered; processes ending after close() began
 * are the policy being stopped.
 */
export function guardLocalPolicy(
  policy: RunningPolicy,
  processes: readonly LocalProcess[],
  heartbeat: Pick<ClusterConfig, 'heartbeat_interval_s' | 'heartbeat_misses'>,
): RunningPolicy {
  let closing = false;
  let failure: ProviderError | undefined;
  for (const process of processes) {
    void process.exited.then(async (code) => {
      if (closing || failure) return;
      const tail = await logTail(process.logFile);
      if (closing || failure) return;
      const how = code === null ? 'was killed' : `exited with code ${code}`;
      failure = new ProviderError(withLogTail(`${process.component} ${how} during the run`, process.logFile, tail), {
        hint: HINT,
      });
    });
  }
  return guardPolicy(policy, {
    failure: () => failure,
    closing: () => void (closing = true),
    heartbeats: processes.map((p) => ({
      component: p.component,
      where: 'this machine',
      url: p.baseUrl,
      path: p.healthPath,
    })),
    intervalS: heartbeat.heartbeat_interval_s,
    misses: heartbeat.heartbeat_misses,
    hint: 'the process hangs or is stopped (kill -STOP); atk run --resume continues from the last checkpoint once it is restarted',
    // An exit here is seen as it happens; a call it cut off needs only the moment its log takes to read.
    graceMs: 1000,
  });
}

/** The trainer as a watched process, named `component`: its control API answers the health checks. */
export function trainerListener(trainer: TrainerProcess, component: string): LocalProcess {
  return {
    component,
    logFile: trainer.logFile,
    exited: trainer.exited,
    baseUrl: trainer.baseUrl,
    healthPath: '/control/health',
  };
}
