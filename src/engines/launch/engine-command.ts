import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { trainerPythonPath } from '../../util/paths.js';
import { vllmExecutable } from './vllm-venv.js';

/** What one launched engine replica is started with. */
export interface EngineLaunchSpec {
  readonly kind: 'vllm' | 'sglang';
  /** Local model directory or hub id the engine loads. */
  readonly model: string;
  /** Name requests use for the base model (LoRA adapters get their own names). */
  readonly servedModelName: string;
  readonly port: number;
  /** Address to bind; default 127.0.0.1 (a cluster launcher gives the node's address). */
  readonly host?: string;
  /** Replaces the default `vllm serve` (atk's venv's vllm, else PATH's) / `python -m sglang.launch_server`; the arguments are still appended. */
  readonly command?: readonly string[];
  /** Added to the engine's environment (model.engine.env), after atk's own variables. */
  readonly env?: Readonly<Record<string, string>>;
  /** Python for the default SGLang command; default python3. */
  readonly python?: string;
  /** Passed through after atk's own flags (later flags win in both engines' argument parsers). */
  readonly args: readonly string[];
  /** CUDA_VISIBLE_DEVICES of this replica; empty = the engine's default device. More than one = tensor parallel. */
  readonly gpus: readonly number[];
  readonly gpuMemoryUtilization: number;
  readonly maxModelLen: number;
  readonly seed?: number;
  /** Set when a LoRA adapter is trained: the engine must accept runtime adapter loads up to this rank. */
  readonly lora?: { readonly rank: number; readonly targetModules: readonly string[] };
}

/** A process to start: executable, arguments and the environment added to atk's own. */
export interface EngineCommand {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** The class vLLM mixes into its workers so /collective_rpc can reload full weights (trainer/atk_trainer/serve/vllm_worker.py). */
export const VLLM_WEIGHT_RELOAD_EXTENSION = 'atk_trainer.vllm_worker.WeightReload';

/** LoRA ranks `vllm serve --max-lora-rank` accepts (its argparse choices). */
export const VLLM_LORA_RANKS: readonly number[] = [8, 16, 32, 64, 128, 256, 320, 512];

/**
 * The command line of one engine replica (docs/engines.md, launch): loopback only,
 * processed logprobs and constant sampling defaults for vLLM, runtime LoRA when an adapter is trained.
 */
export function engineCommand(spec: EngineLaunchSpec): EngineCommand {
  const { defaultCommand, args, env } = PROTOCOLS[spec.kind].build(spec);
  const [file, ...prefix] = spec.command?.length ? spec.command : defaultCommand;
  const devices: Record<string, string> = spec.gpus.length ? { CUDA_VISIBLE_DEVICES: spec.gpus.join(',') } : {};
  return { file, args: [...prefix, ...args, ...spec.args], env: { ...env, ...spec.env, ...devices } };
}

/**
 * An engine command that requires the run token the way the engine itself checks one: vLLM reads
 * VLLM_API_KEY (guarding its /v1 routes), SGLang takes --api-key; atk's stand-ins read ATK_RUN_TOKEN.
 */
export function engineAuth<C extends EngineCommand>(
  protocol: EngineLaunchSpec['kind'],
  command: C,
  token: string | undefined,
): C {
  return token ? PROTOCOLS[protocol].requireToken(command, token) : command;
}

/** What differs between the engines atk launches: their command line, and how each requires a token. */
const PROTOCOLS: Readonly<
  Record<
    EngineLaunchSpec['kind'],
    {
      build(spec: EngineLaunchSpec): BuiltCommand;
      requireToken<C extends EngineCommand>(command: C, token: string): C;
    }
  >
> = {
  vllm: {
    build: (spec) => vllmCommand(spec),
    requireToken: (command, token) => ({ ...command, env: { ...command.env, VLLM_API_KEY: token } }),
  },
  sglang: {
    build: (spec) => sglangCommand(spec),
    requireToken: (command, token) => ({ ...command, args: [...command.args, '--api-key', token] }),
  },
};

interface BuiltCommand {
  readonly defaultCommand: readonly string[];
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** Where the server listens and the model name it answers to: the same flags for vLLM and SGLang. */
function servingArgs(spec: EngineLaunchSpec): string[] {
  return ['--host', spec.host ?? '127.0.0.1', '--port', String(spec.port), '--served-model-name', spec.servedModelName];
}

function vllmCommand(spec: EngineLaunchSpec): BuiltCommand {
  const args = [
    spec.model,
    ...servingArgs(spec),
    '--max-model-len',
    String(spec.maxModelLen),
    '--gpu-memory-utilization',
    String(spec.gpuMemoryUtilization),
    // Without these the model's generation_config.json silently changes sampling, and logprobs are pre-temperature.
    '--generation-config',
    'vllm',
    '--logprobs-mode',
    'processed_logprobs',
    '--return-tokens-as-token-ids',
    ...(spec.seed === undefined ? [] : ['--seed', String(spec.seed)]),
    ...(spec.gpus.length > 1 ? ['--tensor-parallel-size', String(spec.gpus.length)] : []),
    // Two CPU slots: the next step's adapter is loaded before the previous one is unloaded.
    ...(spec.lora
      ? [
          '--enable-lora',
          '--max-lora-rank',
          String(vllmLoraRank(spec.lora.rank) ?? spec.lora.rank),
          '--max-loras',
          '1',
          '--max-cpu-loras',
          '2',
        ]
      : []),
    // Full fine-tuning: full weights are reloaded by atk's worker extension through /collective_rpc.
    ...(spec.lora ? [] : ['--worker-extension-cls', VLLM_WEIGHT_RELOAD_EXTENSION]),
  ];
  // Dev mode registers /reset_prefix_cache and /collective_rpc, called after every weight change.
  const env: Record<string, string> = {
    VLLM_SERVER_DEV_MODE: '1',
    ...(spec.lora ? { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' } : { PYTHONPATH: trainerPythonPath() }),
  };
  return { defaultCommand: [vllmExecutable(), 'serve'], args, env };
}

function sglangCommand(spec: EngineLaunchSpec): BuiltCommand {
  const args = [
    '--model-path',
    spec.model,
    ...servingArgs(spec),
    '--context-length',
    String(spec.maxModelLen),
    '--mem-fraction-static',
    String(spec.gpuMemoryUtilization),
    // As vLLM's --generation-config vllm: the model's generation_config.json must not change sampling.
    '--sampling-defaults',
    'openai',
    ...(spec.seed === undefined ? [] : ['--random-seed', String(spec.seed)]),
    ...(spec.gpus.length > 1 ? ['--tp', String(spec.gpus.length)] : []),
    // Dynamic adapter loads need the rank and target modules fixed at startup.
    ...(spec.lora
      ? [
          '--enable-lora',
          '--max-lora-rank',
          String(spec.lora.rank),
          '--lora-target-modules',
          ...spec.lora.targetModules,
          '--max-loras-per-batch',
          '2',
        ]
      : []),
  ];
  return { defaultCommand: [spec.python ?? 'python3', '-m', 'sglang.launch_server'], args, env: {} };
}

/** The smallest `--max-lora-rank` choice that holds `rank`, or undefined when none does. */
export function vllmLoraRank(rank: number): number | undefined {
  return VLLM_LORA_RANKS.find((r) => r >= rank);
}

const DTYPE_NAMES: Readonly<Record<string, 'float32' | 'bfloat16' | 'float16'>> = {
  float32: 'float32',
  float: 'float32',
  bfloat16: 'bfloat16',
  float16: 'float16',
  half: 'float16',
};

/**
 * The dtype a launched vLLM/SGLang serves the weights in: `--dtype` in the engine's extra arguments, else
 * (`auto`) the bf16/fp16 of the model's config.json. Weight syncs write full weights in it, which the
 * engine would round them to anyway. Undefined (write as trained) when neither says: an fp32 config is
 * served in a dtype that differs between engine versions.
 */
export function servedWeightDtype(
  args: readonly string[],
  modelDir: string,
): 'float32' | 'bfloat16' | 'float16' | undefined {
  const at = args.findIndex((a) => a === '--dtype' || a.startsWith('--dtype='));
  const flag = at < 0 ? undefined : args[at]!.includes('=') ? args[at]!.split('=')[1] : args[at + 1];
  if (flag !== undefined && flag !== 'auto') return DTYPE_NAMES[flag];
  try {
    const config = JSON.parse(readFileSync(join(modelDir, 'config.json'), 'utf8')) as {
      torch_dtype?: unknown;
      dtype?: unknown;
    };
    const dtype = DTYPE_NAMES[String(config.torch_dtype ?? config.dtype)];
    return dtype === 'float32' ? undefined : dtype;
  } catch {
    return undefined;
  }
}
