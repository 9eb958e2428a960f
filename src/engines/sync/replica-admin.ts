import { z } from 'zod';
import { ProviderError } from '../../errors/index.js';
import { syncFault } from './sync-fault.js';
import { requestJson, requestText, type HttpTarget } from '../../util/http.js';
import { VLLM_WEIGHT_RELOAD_EXTENSION } from '../launch/engine-command.js';
import { modelList } from '../shared.js';
import { trainerPythonPath } from '../../util/paths.js';
import { shellQuote } from '../../util/shell-quote.js';

/** The weight-management calls of one engine replica, in its protocol's own routes. */
export interface ReplicaAdmin {
  /** Registers the peft adapter in `dir` under `name`. */
  loadAdapter(name: string, dir: string): Promise<void>;
  unloadAdapter(name: string): Promise<void>;
  /** Drops cached KV so no prefix computed by the previous weights is reused. */
  resetPrefixCache(): Promise<void>;
  /** Throws unless the replica serves the adapter `name`. */
  confirmAdapter(name: string): Promise<void>;
  /** Replaces the base weights with the HF-layout checkpoint in `dir`, labelled `version`. */
  reloadWeights(dir: string, version: string): Promise<void>;
  /** Throws unless the replica reports weight version `version` (when it reports one at all). */
  confirmWeights(version: string): Promise<void>;
  /** Throws, saying how to start it, unless the replica can take a full-weight reload. */
  checkWeightReload(): Promise<void>;
  /** vLLM only: the worker-extension calls of a full-weight broadcast (weight-broadcast.ts). */
  readonly broadcast?: BroadcastReceiver;
}

/** One replica's workers as members of a weight broadcast group (atk's vLLM worker extension). */
export interface BroadcastReceiver {
  /** The torch version of each worker (tensor-parallel rank) of the replica: one group member each. */
  workerTorch(): Promise<string[]>;
  /** Every worker joins the group at `master:port` as rank `rankOffset` + its rank; resolves once all members joined. */
  join(group: {
    readonly masterAddr: string;
    readonly port: number;
    readonly rankOffset: number;
    readonly worldSize: number;
    readonly backend: string;
    readonly timeoutS: number;
  }): Promise<void>;
  /** Every worker loads the tensors of `tensors` ([name, dtype, shape]) as rank 0 broadcasts them, as `version`. */
  receive(tensors: readonly (readonly [string, string, readonly number[]])[], version: string): Promise<void>;
}

/**
 * Admin calls for a vLLM (`/v1/load_lora_adapter`, `/v1/unload_lora_adapter`, dev-mode `/reset_prefix_cache`,
 * adapter listed by `/v1/models`, full weights through `/collective_rpc` and atk's worker extension) or SGLang replica (`/load_lora_adapter`, `/unload_lora_adapter`, `/flush_cache`,
 * `/update_weights_from_disk`, `/get_model_info`); shapes in docs/engines.md.
 * Every method throws ProviderError with the server's message.
 */
export function replicaAdmin(protocol: 'vllm' | 'sglang', baseUrl: string, timeoutMs = 300_000): ReplicaAdmin {
  const target: HttpTarget = { name: protocol, baseUrl, timeoutMs, retries: 2, backoffMs: 250 };
  return ADMINS[protocol](target, syncFault() !== 'keep_prefix_cache');
}

/** Each protocol's admin calls; `resets` false leaves out every prefix-cache reset (ATK_SYNC_FAULT, tests only). */
const ADMINS: Readonly<Record<'vllm' | 'sglang', (target: HttpTarget, resets: boolean) => ReplicaAdmin>> = {
  vllm: (target, resets) => vllmAdmin(target, resets),
  sglang: (target, resets) => sglangAdmin(target, resets),
};

function vllmAdmin(target: HttpTarget, resets: boolean): ReplicaAdmin {
  const resetPrefixCache = async (): Promise<void> =>
    void (resets && (await requestText(target, 'POST', '/reset_prefix_cache')));
  return {
    loadAdapter: async (name, dir) =>
      void (await requestText(target, 'POST', '/v1/load_lora_adapter', { lora_name: name, lora_path: dir })),
    unloadAdapter: async (name) =>
      void (await requestText(target, 'POST', '/v1/unload_lora_adapter', { lora_name: name })),
    resetPrefixCache,
    async confirmAdapter(name) {
      const served = await modelList(target);
      if (!served.includes(name)) throw notServing(target, name, `/v1/models lists ${served.join(', ')}`);
    },
    reloadWeights: async (dir, version) => {
      await collectiveRpc(target, 'atk_reload_weights', [dir, version]);
      // SGLang's reload flushes its own cache (flush_cache: true); vLLM's worker extension cannot.
      await resetPrefixCache();
    },
    async confirmWeights(version) {
      const served = await collectiveRpc(target, 'atk_weight_version');
      // One result per worker (tensor-parallel ranks): every one must have reloaded, and there must be one.
      if (served.length === 0 || !served.every((v) => v === version))
        throw notServing(target, version, `its workers report [${served.map(String).join(', ')}]`);
    },
    async checkWeightReload() {
      await collectiveRpc(target, 'atk_weight_version').catch((error: unknown) => {
        throw new ProviderError(`vllm at ${target.baseUrl} cannot reload full weights: ${(error as Error).message}`, {
          hint: `start it with VLLM_SERVER_DEV_MODE=1 PYTHONPATH=${shellQuote(trainerPythonPath(''))} vllm serve ... --worker-extension-cls ${VLLM_WEIGHT_RELOAD_EXTENSION}, or set algorithm.lora`,
        });
      });
    },
    broadcast: {
      workerTorch: async () => (await collectiveRpc(target, 'atk_torch_version')).map(String),
      join: async (group) =>
        void (await collectiveRpc(target, 'atk_join_weight_group', [
          group.masterAddr,
          group.port,
          group.rankOffset,
          group.worldSize,
          group.backend,
          group.timeoutS,
        ])),
      receive: async (tensors, version) =>
        void (await collectiveRpc(target, 'atk_receive_weights', [tensors, version])),
    },
  };
}

const CollectiveRpcReply = z.looseObject({ results: z.array(z.unknown()) });

/** Calls `method` of atk's worker extension on every worker of a vLLM replica; one result per worker. */
async function collectiveRpc(target: HttpTarget, method: string, args: readonly unknown[] = []): Promise<unknown[]> {
  const reply = await requestJson(target, 'POST', '/collective_rpc', {
    method,
    args,
    timeout: target.timeoutMs / 1000,
  });
  const parsed = CollectiveRpcReply.safeParse(reply);
  if (!parsed.success)
    throw new ProviderError(
      `vllm POST /collective_rpc ${method}: expected {"results": [...]}, got ${JSON.stringify(reply).slice(0, 200)}`,
    );
  return parsed.data.results;
}

const SglangResult = z.looseObject({
  success: z.boolean().optional(),
  error_message: z.string().nullable().optional(),
  message: z.string().optional(),
});
const SglangModelInfo = z.looseObject({ weight_version: z.string().nullable().optional() });

function sglangAdmin(target: HttpTarget, resets: boolean): ReplicaAdmin {
  async function call(path: string, body: unknown): Promise<z.infer<typeof SglangResult>> {
    const reply = SglangResult.parse(await requestJson(target, 'POST', path, body));
    // SGLang answers some failures with 200 and success: false.
    if (reply.success === false)
      throw new ProviderError(`sglang POST ${path} failed: ${reply.error_message ?? reply.message ?? 'no message'}`);
    return reply;
  }
  return {
    loadAdapter: async (name, dir) => void (await call('/load_lora_adapter', { lora_name: name, lora_path: dir })),
    unloadAdapter: async (name) => void (await call('/unload_lora_adapter', { lora_name: name })),
    resetPrefixCache: async () => void (resets && (await requestText(target, 'POST', '/flush_cache'))),
    async confirmAdapter(name) {
      // SGLang's /v1/models does not list adapters in every 0.5.x, so a one-token generation through the
      // adapter is the check: an unknown lora_path is answered with an error.
      const body = { input_ids: [0], sampling_params: { max_new_tokens: 1, temperature: 0 }, lora_path: name };
      await requestJson(target, 'POST', '/generate', body).catch((error: unknown) => {
        throw notServing(target, name, (error as Error).message);
      });
    },
    reloadWeights: async (dir, version) =>
      void (await call('/update_weights_from_disk', { model_path: dir, weight_version: version, flush_cache: resets })),
    checkWeightReload: () => Promise.resolve(), // /update_weights_from_disk is in every SGLang atk supports
    async confirmWeights(version) {
      const info = SglangModelInfo.parse(await requestJson(target, 'GET', '/get_model_info'));
      if (info.weight_version && info.weight_version !== version)
        throw notServing(target, version, `weight_version is ${info.weight_version}`);
    },
  };
}

function notServing(target: HttpTarget, what: string, detail: string): ProviderError {
  return new ProviderError(
    `${target.name} at ${target.baseUrl} does not serve ${what} after the weight sync (${detail})`,
    {
      hint: 'see logs/engine.log for why the load failed',
    },
  );
}
