/**
 * Whether a recipe's fixed GPU memory fits a machine's GPUs: the part that does not shrink with batch
 * sizes (weights, gradients and optimizer state of the trainer; the share of memory each vLLM/SGLang
 * engine reserves and the weights inside it), held to at most `HEADROOM` of what it may use, so that
 * the rest is left for activations (`algorithm.micro_batch_tokens: auto` is sized from it) and KV cache.
 * A lower bound: a recipe that fails it cannot run; one that passes may still need smaller batches.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineConfig, ResolvedRecipe } from '../recipe/index.js';
import { hubSnapshotDir } from '../util/hub-cache.js';

/** The share of a GPU (or of an engine's part of it) the fixed part may take. */
export const HEADROOM = 0.8;
const GIB = 1024 ** 3;

/** What one GPU of the recipe holds: GPU memory that must be free, as the smallest card that holds it. */
export interface GpuNeed {
  /** The GPU index the recipe names (model.trainer.gpus, model.engine.gpus, ...). */
  readonly gpu: number;
  /** The smallest GPU memory, in GiB, on which the fixed part fits under `HEADROOM`. */
  readonly minGiB: number;
  /** What is on it, e.g. "trainer: LoRA base 2.9 GiB", "vllm: 85%, weights 2.9 GiB". */
  readonly parts: readonly string[];
}

/** A recipe's GPU needs, or why none are computed (a CPU recipe, a cluster recipe, an unknown model size). */
export type RecipeGpuNeeds =
  | { readonly kind: 'gpus'; readonly needs: readonly GpuNeed[] }
  | { readonly kind: 'cpu' }
  | { readonly kind: 'cluster' }
  | { readonly kind: 'unknown'; readonly reason: string };

/** Parameters of a model, by `model.path`-like value (a directory or a hub id); undefined when unknown. */
export type ParamsOf = (model: string) => number | undefined;

/**
 * The fixed GPU memory each of the recipe's GPUs needs, by role: the trainer (LoRA: the frozen base in
 * bf16, 2 bytes a parameter; full: fp32 weights, gradients and AdamW moments, 16 bytes, 12 with
 * `weights_dtype: bfloat16`, divided over the trainer's GPUs as FSDP shards them, plus the embedded
 * engine's bf16 serving copy on the first); each launched vLLM/SGLang engine (its
 * `gpu_memory_utilization` of the GPU, holding bf16 weights split over its tensor-parallel ranks).
 */
export function recipeGpuNeeds(recipe: ResolvedRecipe, paramsOf: ParamsOf = modelParams): RecipeGpuNeeds {
  // Placed by Slurm or on hosts: atk validate checks the allocation it runs in.
  if (recipe.cluster.launcher !== 'local') return { kind: 'cluster' };
  const { engine, trainer } = recipe.model;
  const engines = launchedEngines(recipe);
  const trainerOnGpu =
    trainer.device === 'cuda' || (trainer.device === 'auto' && (trainer.gpus.length > 0 || engines.length > 0));
  if (!trainerOnGpu && engines.length === 0) return { kind: 'cpu' };
  const perGpu = new Map<number, { trainerBytes: number; share: number; minGiB: number; parts: string[] }>();
  const at = (gpu: number) => {
    const entry = perGpu.get(gpu) ?? { trainerBytes: 0, share: 0, minGiB: 0, parts: [] };
    perGpu.set(gpu, entry);
    return entry;
  };
  for (const launched of engines) {
    const params = paramsOf(launched.model);
    if (params === undefined) return { kind: 'unknown', reason: `the size of ${launched.model} is unknown` };
    const gpus = launched.engine.gpus.length ? launched.engine.gpus : [0];
    const weightsPerGpu = (2 * params) / tensorParallel(launched.engine.args);
    const share = launched.engine.gpu_memory_utilization;
    for (const gpu of gpus) {
      const entry = at(gpu);
      entry.share += share;
      entry.minGiB = Math.max(entry.minGiB, weightsPerGpu / GIB / (HEADROOM * share));
      entry.parts.push(
        `${launched.role} ${launched.engine.kind}: ${percent(share)} of it, weights ${gib(weightsPerGpu)}`,
      );
    }
  }
  if (trainerOnGpu) {
    const params = paramsOf(recipe.model.path);
    if (params === undefined) return { kind: 'unknown', reason: `the size of ${recipe.model.path} is unknown` };
    const gpus = trainer.gpus.length ? trainer.gpus : [0];
    const lora = recipe.algorithm.lora !== undefined;
    const perParam = lora ? 2 : trainer.weights_dtype === 'bfloat16' ? 12 : 16;
    const state = (perParam * params) / (lora ? 1 : gpus.length);
    for (const [i, gpu] of gpus.entries()) {
      const serving = engine.kind === 'embedded' && !lora && i === 0 ? 2 * params : 0;
      const entry = at(gpu);
      entry.trainerBytes += state + serving;
      entry.parts.push(
        `trainer: ${lora ? 'LoRA base' : 'weights, gradients, optimizer'} ${gib(state)}${serving ? `, embedded engine ${gib(serving)}` : ''}`,
      );
    }
  }
  const needs = [...perGpu.entries()]
    .sort(([a], [b]) => a - b)
    .map(([gpu, entry]) => {
      const left = 1 - entry.share;
      const trainerMin =
        entry.trainerBytes === 0 ? 0 : left > 0 ? entry.trainerBytes / GIB / (HEADROOM * left) : Infinity;
      return { gpu, minGiB: Math.max(entry.minGiB, trainerMin), parts: entry.parts };
    });
  return { kind: 'gpus', needs };
}

/** What a recipe's GPUs must be, e.g. "2 GPUs of >= 5 GiB". */
export function needsText(needs: readonly GpuNeed[]): string {
  const count = Math.max(...needs.map((n) => n.gpu)) + 1;
  return `${count} GPU${count > 1 ? 's' : ''} of >= ${Math.ceil(Math.max(...needs.map((n) => n.minGiB)))} GiB`;
}

/** One recipe against the GPUs' memory (GiB, by index): whether it fits, and the one-line reason. */
export function fitsGpus(needs: readonly GpuNeed[], gpuGiB: readonly number[]): { fits: boolean; why: string } {
  const count = Math.max(...needs.map((n) => n.gpu)) + 1;
  if (gpuGiB.length < count) return { fits: false, why: `needs ${needsText(needs)}, has ${gpuGiB.length}` };
  const short = needs.find((n) => gpuGiB[n.gpu]! < n.minGiB);
  if (short === undefined) return { fits: true, why: `needs ${needsText(needs)}` };
  return {
    fits: false,
    why: `GPU ${short.gpu} has ${Math.floor(gpuGiB[short.gpu]!)} GiB, needs >= ${Math.ceil(short.minGiB)} (${short.parts.join('; ')})`,
  };
}

/**
 * A model's parameter count: a local directory's (or the Hugging Face cache's snapshot of a hub id's)
 * safetensors byte count over its dtype's width, else the size a hub id names (`Qwen2.5-1.5B-Instruct`:
 * 1.5e9; `Qwen3-30B-A3B`: 30e9, all experts), else undefined.
 */
export function modelParams(model: string): number | undefined {
  const dir = existsSync(join(model, 'config.json')) ? model : hubSnapshotDir(model);
  if (dir !== undefined) {
    const bytes = safetensorsBytes(dir);
    if (bytes !== undefined) return bytes / dtypeWidth(dir);
  }
  const named = model.match(/(?:^|[-_/])(\d+(?:\.\d+)?)[Bb](?=$|[-_])/);
  return named ? Number(named[1]) * 1e9 : undefined;
}

interface LaunchedEngine {
  readonly role: string;
  readonly model: string;
  readonly engine: EngineConfig;
}

function launchedEngines(recipe: ResolvedRecipe): LaunchedEngine[] {
  const launched = (engine: EngineConfig | undefined): engine is EngineConfig =>
    engine !== undefined && (engine.kind === 'vllm' || engine.kind === 'sglang');
  const list: LaunchedEngine[] = [];
  if (launched(recipe.model.engine))
    list.push({ role: 'policy', model: recipe.model.path, engine: recipe.model.engine });
  const { user, teacher } = recipe;
  if (user?.kind === 'engine' && user.model !== undefined && launched(user.engine))
    list.push({ role: 'user', model: user.model, engine: user.engine });
  if (teacher !== undefined && launched(teacher.engine))
    list.push({ role: 'teacher', model: teacher.path, engine: teacher.engine });
  return list;
}

function tensorParallel(args: readonly string[]): number {
  for (const [i, arg] of args.entries()) {
    const [flag, value] = arg.includes('=') ? arg.split('=', 2) : [arg, args[i + 1]];
    if (flag === '--tensor-parallel-size' || flag === '-tp' || flag === '--tp-size' || flag === '--tp')
      return Math.max(1, Number(value) || 1);
  }
  return 1;
}

function safetensorsBytes(dir: string): number | undefined {
  const index = join(dir, 'model.safetensors.index.json');
  if (existsSync(index)) {
    const total = (JSON.parse(readFileSync(index, 'utf8')) as { metadata?: { total_size?: number } }).metadata
      ?.total_size;
    if (typeof total === 'number') return total;
  }
  const single = join(dir, 'model.safetensors');
  return existsSync(single) ? statSync(single).size : undefined;
}

function dtypeWidth(dir: string): number {
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { torch_dtype?: string; dtype?: string };
  const dtype = config.torch_dtype ?? config.dtype ?? 'float32';
  return dtype === 'float32' ? 4 : 2;
}

function gib(bytes: number): string {
  return `${(bytes / GIB).toFixed(1)} GiB`;
}

function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}
