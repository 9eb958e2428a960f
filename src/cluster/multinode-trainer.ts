/**
 * A trainer across nodes: the one-node trainer command turned into one torchrun per node of an srun
 * step. The rendezvous is torchrun's static one (--master_addr on the first trainer node, --node_rank from
 * the step's SLURM_NODEID) rather than c10d: c10d orders nodes by host name, and atk must know that
 * global rank 0, which serves the control API and the embedded engine, runs on the first node.
 */
import type { StepCommand } from './slurm-steps.js';

/**
 * `sh -c 'exec python -m atk_trainer.torchrun --node_rank "$SLURM_NODEID" --nnodes N --nproc_per_node G
 * --master_addr A --master_port P -m atk_trainer ...'` from `python [-m atk_trainer.torchrun ...] -m atk_trainer ...`.
 * The trainer's nodes are the first of the allocation, so SLURM_NODEID (the node's index in the job) is its rank.
 * The environment stays the command's own.
 */
export function multiNodeTrainerCommand(
  local: StepCommand,
  nnodes: number,
  nprocPerNode: number,
  masterAddr: string,
  masterPort: number,
): { file: string; args: string[] } {
  const module = local.args.lastIndexOf('atk_trainer');
  const trainerArgs = local.args.slice(module - 1); // -m atk_trainer --host ... --port ...
  const torchrun = [
    '--nnodes',
    String(nnodes),
    '--nproc_per_node',
    String(nprocPerNode),
    '--master_addr',
    masterAddr,
    '--master_port',
    String(masterPort),
  ];
  return {
    file: 'sh',
    args: [
      '-c',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, evaluated by sh on the node
      'exec "$0" -m atk_trainer.torchrun --node_rank "${SLURM_NODEID:?}" "$@"',
      local.file,
      ...torchrun,
      ...trainerArgs,
    ],
  };
}
