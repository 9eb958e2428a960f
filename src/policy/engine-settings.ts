import type { EngineConfig, TrainerConfig } from '../recipe/schema.js';
import { vllmLoraRank, VLLM_LORA_RANKS } from '../engines/launch/index.js';

/** The parts of a recipe the engine settings depend on (a Recipe or a ResolvedRecipe). */
export interface EngineSettingsInput {
  readonly model: {
    readonly engine: EngineConfig;
    readonly trainer: TrainerConfig;
    readonly init: 'pretrained' | 'random';
  };
  readonly algorithm: { readonly lora?: { readonly rank: number } | undefined };
  /** On slurm/hosts the replicas spread over nodes: engine.gpus lists the GPUs of each node. */
  readonly cluster?: { readonly launcher: 'local' | 'slurm' | 'hosts' };
}

/** One refused setting: dotted key path and a one-line reason. */
export interface EngineSettingProblem {
  readonly path: string;
  readonly message: string;
}

// Above this share of an explicitly shared GPU, too little is left for the trainer's weights,
// optimizer state and activations of even a small model.
const SHARED_GPU_MAX_UTILIZATION = 0.8;

/**
 * Settings a launched vLLM/SGLang engine cannot honour: a URL (it gets its own), replicas without GPUs
 * to put them on, a GPU shared with the trainer at a memory share that leaves the trainer nothing.
 */
export function launchedEngineProblems(recipe: EngineSettingsInput): EngineSettingProblem[] {
  const { engine, trainer } = recipe.model;
  const problems: EngineSettingProblem[] = [];
  const refuse = (path: string, message: string): void => void problems.push({ path: `model.${path}`, message });
  if (engine.url !== undefined)
    refuse(
      'engine.url',
      `a launched ${engine.kind} engine gets its own loopback URL; use kind url to attach to a running server`,
    );
  if (new Set(engine.gpus).size !== engine.gpus.length) refuse('engine.gpus', 'lists a GPU twice');
  // On a cluster each node's replicas share that node's GPUs.
  const onNodes = recipe.cluster !== undefined && recipe.cluster.launcher !== 'local';
  const perNode = onNodes
    ? Math.ceil(engine.replicas / Math.min(engine.nodes ?? engine.replicas, engine.replicas))
    : engine.replicas;
  if (perNode > 1 && (engine.gpus.length === 0 || engine.gpus.length % perNode !== 0)) {
    const where = onNodes ? ` on each node (${perNode} replicas share one)` : '';
    refuse(
      'engine.replicas',
      `${perNode} replicas need model.engine.gpus to list a multiple of ${perNode} GPUs${where} (each replica gets an equal share); it lists ${engine.gpus.length}`,
    );
  }
  // Empty lists mean the CUDA default device, GPU 0, for both processes.
  const engineGpus = engine.gpus.length ? engine.gpus : [0];
  const trainerGpus = trainer.device === 'cpu' ? [] : trainer.gpus.length ? trainer.gpus : [0];
  const shared = [...new Set(engineGpus.filter((g) => trainerGpus.includes(g)))];
  if (!onNodes && shared.length && engine.gpu_memory_utilization > SHARED_GPU_MAX_UTILIZATION) {
    const unset = [!engine.gpus.length && 'model.engine.gpus', !trainer.gpus.length && 'model.trainer.gpus'].filter(
      Boolean,
    );
    const how = unset.length ? ` (${unset.join(' and ')} ${unset.length > 1 ? 'are' : 'is'} not set: GPU 0)` : '';
    refuse(
      'engine.gpu_memory_utilization',
      `GPU ${shared.join(', ')} is shared with the trainer${how}; at ${engine.gpu_memory_utilization} the trainer is left too little (use <= ${SHARED_GPU_MAX_UTILIZATION}, e.g. 0.5, or give each its own GPUs)`,
    );
  }
  return problems;
}

/** How each non-embedded kind's own prefix cache is turned off, for a recipe that sizes the embedded one's. */
const OWN_PREFIX_CACHE: Readonly<Record<string, string>> = {
  vllm: 'a vllm engine keeps its own within gpu_memory_utilization (model.engine.args: --no-enable-prefix-caching turns it off)',
  sglang:
    'an sglang engine keeps its own within gpu_memory_utilization (model.engine.args: --disable-radix-cache turns it off)',
  url: 'the server at model.engine.url keeps its own',
};

/** model.engine.prefix_cache_tokens given for an engine other than the embedded one, where it does nothing. */
export function prefixCacheProblems(recipe: EngineSettingsInput): EngineSettingProblem[] {
  const { engine } = recipe.model;
  if (engine.kind === 'embedded' || engine.prefix_cache_tokens === 'auto') return [];
  const own = OWN_PREFIX_CACHE[engine.kind] ?? `a ${engine.kind} engine keeps its own`;
  return [{ path: 'model.engine.prefix_cache_tokens', message: `sizes the embedded engine's prefix cache; ${own}` }];
}

/** A LoRA rank vLLM cannot serve. */
export function vllmLoraProblems(recipe: EngineSettingsInput): EngineSettingProblem[] {
  const lora = recipe.algorithm.lora;
  if (!lora || vllmLoraRank(lora.rank) !== undefined) return [];
  return [
    {
      path: 'algorithm.lora.rank',
      message: `vLLM serves LoRA ranks up to ${VLLM_LORA_RANKS.at(-1)}; got ${lora.rank}`,
    },
  ];
}

/** Launch-only keys on an engine atk does not launch (the embedded one, or a url engine); `where` says why. */
export function notLaunchedProblems(recipe: EngineSettingsInput, where: string, gpus: string): EngineSettingProblem[] {
  const { engine } = recipe.model;
  const problems: EngineSettingProblem[] = [];
  const refuse = (path: string, message: string): void => void problems.push({ path: `model.${path}`, message });
  if (engine.command) refuse('engine.command', `only vllm and sglang engines are launched by atk; ${where}`);
  if (engine.args.length) refuse('engine.args', `only vllm and sglang engines are launched by atk; ${where}`);
  if (Object.keys(engine.env).length)
    refuse('engine.env', `only vllm and sglang engines are launched by atk; ${where}`);
  if (engine.replicas > 1) refuse('engine.replicas', `replicas are launched vllm/sglang servers; ${where}`);
  if (engine.gpus.length) refuse('engine.gpus', gpus);
  return problems;
}

/** Random init with an engine that loads its own weights from model.path. */
export function randomInitProblems(recipe: EngineSettingsInput): EngineSettingProblem[] {
  if (recipe.model.init !== 'random') return [];
  const { kind } = recipe.model.engine;
  return [
    {
      path: 'model.init',
      message: `a ${kind} engine loads the weights in model.path, so a randomly initialised trainer would train a different model; random init needs the embedded engine`,
    },
  ];
}

/** Trainer GPUs that cannot be used: repeated, or with device cpu. Every engine kind shares this check. */
export function trainerGpuProblems(recipe: EngineSettingsInput): EngineSettingProblem[] {
  const { trainer } = recipe.model;
  const problems: EngineSettingProblem[] = [];
  const refuse = (path: string, message: string): void => void problems.push({ path: `model.${path}`, message });
  // Several trainer GPUs start one torchrun rank each and shard the model with FSDP, which needs CUDA.
  if (new Set(trainer.gpus).size !== trainer.gpus.length) refuse('trainer.gpus', 'lists a GPU twice');
  if (trainer.device === 'cpu' && trainer.gpus.length) {
    refuse(
      'trainer.gpus',
      trainer.gpus.length > 1
        ? 'several trainer GPUs shard the model with FSDP, which needs model.trainer.device cuda (or auto); with device cpu they do nothing'
        : 'does nothing with model.trainer.device cpu',
    );
  }
  return problems;
}
