import { ProviderError } from '../../errors/index.js';
import type { BroadcastReceiver } from './replica-admin.js';

/** The trainer's end of a weight broadcast (its control API /control/weights/*, trainer/PROTOCOL.md). */
export interface WeightSender {
  open(request: {
    readonly masterAddr: string;
    readonly dtype?: 'float32' | 'bfloat16' | 'float16' | undefined;
    readonly timeoutS: number;
  }): Promise<{
    readonly port: number;
    readonly backend: string;
    readonly tensors: readonly (readonly [string, string, readonly number[]])[];
    readonly bytes: number;
    /** The trainer's torch version (absent from older trainers). */
    readonly torch?: string | undefined;
  }>;
  join(worldSize: number): Promise<void>;
  send(): Promise<{ readonly tensors: number; readonly bytes: number }>;
}

/** What one sync moved: the bytes of the weights (once, whatever the replicas) and, for a broadcast, the tensors. */
export interface SyncTransfer {
  readonly bytes: number;
  readonly tensors?: number;
}

export interface WeightBroadcastOptions {
  readonly sender: WeightSender;
  /** Each replica's workers, with the replica's base URL for errors. */
  readonly replicas: readonly { readonly url: string; readonly receiver: BroadcastReceiver }[];
  /** The trainer's address as the engine nodes reach it (its control API's host). */
  readonly masterAddr: string;
  /** The dtype the engines serve (the tensors are sent in it). */
  readonly dtype?: 'float32' | 'bfloat16' | 'float16' | undefined;
  /** Limit of every wait in the group (rendezvous, each broadcast), so a lost member fails the sync. */
  readonly timeoutS: number;
}

/** Moves the trainer's full weights into every engine worker over a torch.distributed group. */
export interface WeightBroadcast {
  /** Broadcasts the weights and has every worker load them as `version`; the group is made on the first call. */
  reload(version: string): Promise<SyncTransfer>;
}

/**
 * Full-weight sync without a shared disk (the pattern of TRL, verl, OpenRLHF, prime-rl): the first reload
 * opens a rendezvous store on the trainer, counts each replica's workers, and has the trainer (rank 0)
 * and every worker (ranks 1.., replica by replica) join one group; each reload then runs the trainer's
 * send beside every replica's receive, tensor by tensor in the served dtype. NCCL on GPUs, gloo on CPU
 * (the trainer picks by where its weights are). A failed reload drops the group, so the next one makes
 * a new group rather than reuse one a member may have left.
 * @throws ProviderError naming the replica whose join or receive failed (a worker gone, a timeout).
 */
export function createWeightBroadcast(options: WeightBroadcastOptions): WeightBroadcast {
  let group: Promise<Awaited<ReturnType<WeightSender['open']>>> | undefined;

  async function formGroup(): Promise<Awaited<ReturnType<WeightSender['open']>>> {
    const { sender, replicas, timeoutS, masterAddr } = options;
    const opened = await sender.open({ masterAddr, dtype: options.dtype, timeoutS });
    const torch = await Promise.all(replicas.map((r, i) => onReplica(i, 'count workers', r.receiver.workerTorch())));
    // torch.distributed's rendezvous does not connect across torch versions (1.13's store and 2.x's do not
    // talk): every member would wait out the timeout, so a mismatch is refused before anyone joins.
    torch.forEach((versions, i) => {
      const other = versions.find((v) => opened.torch && minorVersion(v) !== minorVersion(opened.torch));
      if (other)
        throw new ProviderError(
          `weight broadcast: vllm replica ${i} at ${replicas[i]!.url} runs torch ${other}, the trainer torch ${opened.torch}: their torch.distributed groups cannot connect`,
          {
            hint: "run the trainer on the engine's torch (model.trainer.python: the Python of vLLM's venv), or set model.engine.weight_sync: disk",
          },
        );
    });
    const workers = torch.map((versions) => versions.length);
    const offsets = workers.map((_, i) => 1 + workers.slice(0, i).reduce((a, b) => a + b, 0));
    const worldSize = 1 + workers.reduce((a, b) => a + b, 0);
    await Promise.all([
      sender.join(worldSize),
      ...replicas.map((r, i) =>
        onReplica(
          i,
          'join the weight group',
          r.receiver.join({
            masterAddr,
            port: opened.port,
            rankOffset: offsets[i]!,
            worldSize,
            backend: opened.backend,
            timeoutS,
          }),
        ),
      ),
    ]);
    return opened;
  }

  function onReplica<T>(replica: number, what: string, call: Promise<T>): Promise<T> {
    return call.catch((error: unknown) => {
      throw new ProviderError(
        `weight broadcast: vllm replica ${replica} at ${options.replicas[replica]!.url} could not ${what}: ${(error as Error).message}`,
        { hint: 'see logs/engine.log and logs/trainer.log' },
      );
    });
  }

  return {
    async reload(version) {
      group ??= formGroup();
      try {
        const opened = await group;
        const [sent] = await Promise.all([
          options.sender.send(),
          ...options.replicas.map((r, i) =>
            onReplica(i, 'receive the weights', r.receiver.receive(opened.tensors, version)),
          ),
        ]);
        return { bytes: sent.bytes, tensors: sent.tensors };
      } catch (error) {
        group = undefined;
        throw error;
      }
    },
  };
}

/** `major.minor` of a torch version (`2.13.0+cpu` -> `2.13`). */
function minorVersion(version: string): string {
  return version.split('.').slice(0, 2).join('.');
}
