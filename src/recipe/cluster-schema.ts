/**
 * The recipe's `cluster` section: where the trainer and the engine replicas run. `local` is one
 * machine (everything on loopback); `slurm` places them with `srun` steps inside an allocation;
 * `hosts` reaches a fixed host list through a command template such as `[ssh, "{host}"]`.
 */
import { z } from 'zod';

export const ClusterLauncher = z.enum(['local', 'slurm', 'hosts']);

export const ClusterSchema = z
  .strictObject({
    launcher: ClusterLauncher.default('local').describe(
      'Where processes run: local (this machine, loopback only), slurm (srun steps inside the salloc/sbatch allocation atk runs in), or hosts (the hosts list, reached through command).',
    ),
    hosts: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'hosts: the machines, in order (the trainer takes the first model.trainer.nodes, engine replicas the next); Slurm hostlists such as gpu[1-4] are expanded.',
      ),
    command: z
      .array(z.string())
      .min(1)
      .default(['ssh', '{host}'])
      .describe(
        'hosts: command prefix that runs a command on {host} (its arguments follow); e.g. [ssh, -o, BatchMode=yes, "{host}"].',
      ),
    gpus_per_node: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe(
        'hosts: GPUs on each host, checked against model.engine.gpus_per_replica (slurm reads the allocation instead).',
      ),
    shared_dir: z
      .string()
      .optional()
      .describe(
        'A directory every node sees at the same path (NFS, Lustre); LoRA syncs are written there instead of uploaded to each engine host.',
      ),
    auth: z
      .enum(['token', 'none'])
      .default('token')
      .describe(
        'token: listeners off loopback (trainer control API, engines) require a per-run random token header; none is refused for slurm and hosts.',
      ),
    heartbeat_interval_s: z
      .number()
      .positive()
      .default(10)
      .describe(
        'Seconds between the health checks of the trainer and the engine replicas atk started (on this machine or placed by slurm/hosts) while nothing calls them (each waits at most 5 s).',
      ),
    heartbeat_misses: z
      .number()
      .int()
      .positive()
      .default(3)
      .describe(
        'Unanswered health checks in a row that make a started process lost (a hung node or process): the run fails naming it.',
      ),
  })
  .describe('Where the trainer and the engine replicas run: this machine, a Slurm allocation, or a list of hosts.');

export type ClusterConfig = z.infer<typeof ClusterSchema>;
