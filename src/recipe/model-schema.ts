/** The recipe's `model` section: the policy, how the engine serves it and how the trainer trains it. */
import { z } from 'zod';
import { nonNegativeInt, positiveInt, positiveNumber } from './schema-parts.js';

export const EngineKind = z.enum(['embedded', 'vllm', 'sglang', 'url']);

export const EngineSchema = z
  .strictObject({
    kind: EngineKind.default('embedded').describe(
      'Inference engine: embedded (served by the bundled trainer, CPU or GPU), vllm, sglang, or url (an already running server).',
    ),
    url: z
      .union([z.string().url(), z.array(z.string().url()).min(1)])
      .optional()
      .describe(
        'Base URL of a running server, or a list of them (replicas someone else started, routed by fewest in flight); required when kind is url.',
      ),
    protocol: z
      .enum(['vllm', 'sglang'])
      .default('vllm')
      .describe('HTTP protocol spoken by a url engine: vllm (/v1/completions) or sglang (/generate).'),
    command: z
      .array(z.string())
      .optional()
      .describe('Launch command replacing the default (e.g. a wrapper script); the port and model are still appended.'),
    args: z.array(z.string()).default([]).describe('Extra command-line arguments passed through to the engine.'),
    env: z
      .record(z.string(), z.string())
      .default({})
      .describe(
        "vllm/sglang: environment variables of the launched engine, added to atk's own. vLLM on a machine without a GPU gets VLLM_CPU_KVCACHE_SPACE (GiB, a tenth of the available memory) and VLLM_CPU_OMP_THREADS_BIND (the cores atk may use) here, and --no-enable-chunked-prefill in args, unless set (resolved.yaml shows them).",
      ),
    gpus: z
      .array(nonNegativeInt)
      .default([])
      .describe('GPU indices the engine may use (CUDA_VISIBLE_DEVICES); empty = engine default.'),
    gpu_memory_utilization: z
      .number()
      .gt(0)
      .max(1)
      .default(0.85)
      .describe('Share of GPU memory the engine may take (vllm/sglang); lower it when the trainer shares the GPU.'),
    max_model_len: positiveInt
      .default(4096)
      .describe('Longest sequence (prompt + generation) the engine accepts, in tokens.'),
    replicas: positiveInt
      .default(1)
      .describe('Engine replicas; each engine request goes to the replica with the fewest samples in flight.'),
    startup_timeout_s: positiveNumber.default(900).describe('Seconds to wait for the engine to become healthy.'),
    sync_timeout_s: positiveNumber
      .default(300)
      .describe(
        'Seconds one weight-sync request to an engine replica (load, update) and each wait of a broadcast (rendezvous, one tensor) may take; a lost replica fails the sync by then.',
      ),
    sync_probe_tolerance: positiveNumber
      .optional()
      .describe(
        "Largest gap allowed between the engine's logprobs of the probe sequence checked after every weight sync and the trainer's own; default 0.001 when both compute in float32, else 1.0 (bf16/fp16 rounding alone moves logprobs). Raise it for an engine whose kernels differ more; the step's sync/probe_max_abs_logprob_diff shows the gap.",
      ),
    max_batch_size: positiveInt
      .default(256)
      .describe('embedded: most sequences decoded together in one batch; more wait for a free row.'),
    prefix_cache_tokens: z
      .union([nonNegativeInt, z.literal('auto')])
      .default('auto')
      .describe(
        "embedded: tokens of finished sequences kept so a conversation's next turn prefills only what is new (the prefix cache; 0 = off). auto = a quarter of the GPU memory free between train steps on CUDA; on CPU 16384, or a tenth of the available memory when that is less.",
      ),
    // Cluster placement (cluster.launcher slurm or hosts).
    nodes: positiveInt
      .optional()
      .describe(
        "slurm/hosts: nodes the replicas spread over, after the trainer's; default: one node per replica. model.engine.gpus then lists the GPUs on each node.",
      ),
    gpus_per_replica: nonNegativeInt
      .optional()
      .describe('slurm/hosts: GPUs each replica needs on its node; atk validate checks the allocation has them.'),
    weight_sync: z
      .enum(['auto', 'disk', 'broadcast'])
      .default('auto')
      .describe(
        'vllm, full weights: disk (the trainer writes them, each replica reloads the files) or broadcast (a torch.distributed group, NCCL on GPUs, gloo on CPU, from trainer rank 0 to every engine worker); auto: broadcast off one machine without cluster.shared_dir, else disk.',
      ),
  })
  .describe('How generation is served.');

export const TrainerSchema = z
  .strictObject({
    python: z
      .string()
      .optional()
      .describe(
        'Python interpreter that can import torch; $ATK_PYTHON is tried first, this next, then python3 and /usr/bin/python3.',
      ),
    device: z
      .enum(['auto', 'cpu', 'cuda'])
      .default('auto')
      .describe('Where the trainer runs; auto picks cuda when available.'),
    dtype: z
      .enum(['auto', 'float32', 'bfloat16'])
      .default('auto')
      .describe('Parameter/compute dtype; auto = bfloat16 autocast on CUDA, float32 on CPU.'),
    backend: z
      .enum(['auto', 'transformers', 'builtin'])
      .default('auto')
      .describe(
        'Model code: transformers/peft when installed (auto), or the built-in model for model_type qwen2, qwen3, llama and mistral (rope default, linear, dynamic, YaRN or llama3; sliding-window attention); other model types need transformers.',
      ),
    threads: positiveInt
      .default(1)
      .describe('torch CPU threads; one beat two on a 2-core machine for small models (see bench).'),
    gradient_checkpointing: z
      .boolean()
      .default(false)
      .describe('Recompute activations in backward to save memory at ~30% more compute.'),
    compile: z
      .boolean()
      .default(false)
      .describe('torch.compile each decoder layer (torch >= 2.2): faster train steps after a slow first one.'),
    cuda_graphs: z
      .boolean()
      .default(true)
      .describe(
        "On CUDA the embedded engine's decode step (built-in model) is captured as CUDA graphs per batch-size bucket; no effect on CPU.",
      ),
    weights_dtype: z
      .enum(['float32', 'bfloat16'])
      .default('float32')
      .describe(
        'Full fine-tuning on CUDA: float32 master weights with bf16 compute, or bfloat16 weights with a float32 optimizer (less memory).',
      ),
    gpus: z
      .array(nonNegativeInt)
      .default([])
      .describe(
        'GPU indices for the trainer (CUDA_VISIBLE_DEVICES); more than one starts one torchrun rank per GPU and shards the model with FSDP.',
      ),
    startup_timeout_s: positiveNumber
      .default(300)
      .describe('Seconds to wait for the trainer process to become healthy.'),
    call_timeout_s: positiveNumber
      .default(3600)
      .describe(
        'Seconds one call to the trainer (a train step, a checkpoint save or load) may take before the run fails naming it; raise it for steps longer than an hour.',
      ),
    nodes: positiveInt
      .default(1)
      .describe(
        'slurm: nodes the trainer spans (one torchrun per node, rendezvous on the first); the first nodes of the allocation.',
      ),
  })
  .describe('The bundled PyTorch trainer.');

export const ModelSchema = z
  .strictObject({
    path: z
      .string()
      .min(1)
      .describe(
        'Local Hugging Face layout directory (relative to the recipe, or shipped with atk such as models/tiny-arith), a hub id such as Qwen/Qwen2.5-1.5B-Instruct, or another run (runs/<name>/latest, a run or checkpoint directory): its newest checkpoint, LoRA merged.',
      ),
    tokenizer: z
      .string()
      .optional()
      .describe('Directory holding tokenizer.json/tokenizer_config.json, when not the model directory.'),
    chat_template: z
      .string()
      .optional()
      .describe(
        'Jinja chat template file overriding the tokenizer_config.json template, or a template atk ships: chatml-tools (ChatML with tools in the system turn and calls as a JSON list in one <tool_call>, for ChatML models whose template has no tools, e.g. SmolLM2-Instruct).',
      ),
    init: z
      .enum(['pretrained', 'random'])
      .default('pretrained')
      .describe(
        'pretrained loads the weights in path; random initialises from its config.json (for training a model from scratch, e.g. the tiny warm start).',
      ),
    engine: EngineSchema.prefault({}),
    trainer: TrainerSchema.prefault({}),
  })
  .describe('The policy model, its tokenizer, and how it is served and trained.');
