/**
 * The recipe schema: the single source of truth for what a recipe may say. Types are
 * `z.infer` of it, `atk schema` exports it as JSON Schema, and the README's recipe reference
 * is checked against it by a test. Every key carries a `.describe()` text for those uses.
 *
 * Keys are snake_case on both sides of the TypeScript/Python boundary.
 */
import { z } from 'zod';

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();
const positiveNumber = z.number().positive();

/**
 * A check that exactly one of `keys` is present (a tool is a name, a module or an MCP server), so
 * a recipe that gives two or none gets one clear message instead of a union's guesswork. With
 * `allowNone`, giving none is left to the consumer (which reports it with its own hint).
 */
function exactlyOne(keys: readonly string[], what: string, allowNone = false) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const given = keys.filter((k) => value[k] !== undefined);
    if (given.length === 1 || (allowNone && given.length === 0)) return;
    ctx.addIssue({
      code: 'custom',
      path: given.length > 1 ? [given[1]!] : [],
      message: given.length > 1 ? `give only one of ${given.join(', ')} for ${what}` : `${what} needs one of ${keys.join(', ')}`,
    });
  };
}

/** Free-form options handed to a registered component (tool, reward, dataset). */
const componentOptions = z.record(z.string(), z.unknown());

export const EngineKind = z.enum(['embedded', 'vllm', 'sglang', 'url']);

export const EngineSchema = z
  .strictObject({
    kind: EngineKind.default('embedded').describe(
      'Inference engine: embedded (served by the bundled trainer, CPU or GPU), vllm, sglang, or url (an already running server).',
    ),
    url: z.string().url().optional().describe('Base URL of a running server; required when kind is url.'),
    protocol: z
      .enum(['vllm', 'sglang'])
      .default('vllm')
      .describe('HTTP protocol spoken by a url engine: vllm (/v1/completions) or sglang (/generate).'),
    command: z
      .array(z.string())
      .optional()
      .describe('Launch command replacing the default (e.g. a wrapper script); the port and model are still appended.'),
    args: z.array(z.string()).default([]).describe('Extra command-line arguments passed through to the engine.'),
    gpus: z.array(nonNegativeInt).default([]).describe('GPU indices the engine may use (CUDA_VISIBLE_DEVICES); empty = engine default.'),
    gpu_memory_utilization: z
      .number()
      .gt(0)
      .max(1)
      .default(0.85)
      .describe('Share of GPU memory the engine may take (vllm/sglang); lower it when the trainer shares the GPU.'),
    max_model_len: positiveInt.default(4096).describe('Longest sequence (prompt + generation) the engine accepts, in tokens.'),
    replicas: positiveInt.default(1).describe('Engine replicas; each engine request goes to the replica with the fewest samples in flight.'),
    startup_timeout_s: positiveNumber.default(900).describe('Seconds to wait for the engine to become healthy.'),
    max_batch_size: positiveInt.default(256).describe('embedded: most sequences decoded together in one batch; more wait for a free row.'),
  })
  .describe('How generation is served.');

export const TrainerSchema = z
  .strictObject({
    python: z.string().optional().describe('Python interpreter that can import torch; $ATK_PYTHON is tried first, this next, then python3 and /usr/bin/python3.'),
    device: z.enum(['auto', 'cpu', 'cuda']).default('auto').describe('Where the trainer runs; auto picks cuda when available.'),
    dtype: z.enum(['auto', 'float32', 'bfloat16']).default('auto').describe('Parameter/compute dtype; auto = bfloat16 autocast on CUDA, float32 on CPU.'),
    backend: z
      .enum(['auto', 'transformers', 'builtin'])
      .default('auto')
      .describe('Model code: transformers/peft when installed (auto), or the built-in qwen2 implementation (rope default, linear, dynamic or YaRN; sliding-window attention).'),
    threads: positiveInt.default(1).describe('torch CPU threads; one beat two on a 2-core machine for small models (see bench).'),
    gradient_checkpointing: z.boolean().default(false).describe('Recompute activations in backward to save memory at ~30% more compute.'),
    gpus: z.array(nonNegativeInt).default([]).describe('GPU indices for the trainer (CUDA_VISIBLE_DEVICES); more than one starts one torchrun rank per GPU and shards the model with FSDP.'),
    startup_timeout_s: positiveNumber.default(300).describe('Seconds to wait for the trainer process to become healthy.'),
  })
  .describe('The bundled PyTorch trainer.');

export const ModelSchema = z
  .strictObject({
    path: z.string().min(1).describe('Local Hugging Face layout directory (relative to the recipe, or shipped with atk such as models/tiny-arith) or a hub id such as Qwen/Qwen2.5-1.5B-Instruct.'),
    tokenizer: z.string().optional().describe('Directory holding tokenizer.json/tokenizer_config.json, when not the model directory.'),
    chat_template: z.string().optional().describe('Jinja chat template file overriding the tokenizer_config.json template.'),
    init: z
      .enum(['pretrained', 'random'])
      .default('pretrained')
      .describe('pretrained loads the weights in path; random initialises from its config.json (for training a model from scratch, e.g. the tiny warm start).'),
    engine: EngineSchema.prefault({}),
    trainer: TrainerSchema.prefault({}),
  })
  .describe('The policy model, its tokenizer, and how it is served and trained.');

const DatasetFieldsSchema = z.strictObject({
  prompt: z.string().min(1).default('prompt').describe('Column holding the first user message (used when there is no prompt_template).'),
  answer: z.string().min(1).optional().describe('Column holding the reference answer the reward compares with.'),
  id: z.string().min(1).optional().describe('Column holding a stable task id; default: row-N (the row number in the file).'),
  metadata: z
    .array(z.string().min(1))
    .optional()
    .describe('Columns kept in task.data for tools, rewards and {{placeholders}}; default: every column.'),
});

const DatasetSplitSchema = z.union([
  z.strictObject({ field: z.string().min(1).describe('Column whose value names the row\'s split (e.g. train, test).') }),
  z.strictObject({ file: z.string().min(1).describe('Second data file holding the eval_split rows; path holds the split rows.') }),
  z.strictObject({ fraction: z.number().gt(0).lt(1).describe('Share of rows held out (seeded) as eval_split; the rest are split.') }),
]);

export const DatasetSchema = z
  .strictObject({
    name: z.string().min(1).default('file').describe('Registered dataset: arith, gsm8k, deepcoder, tau2, or file (a .jsonl/.json/.csv/.parquet at path).'),
    path: z.string().optional().describe('Data file or directory; relative paths resolve against the recipe. Default: the dataset\'s own location.'),
    split: z.string().default('train').describe('Split used for training.'),
    eval_split: z.string().default('test').describe('Split used for evaluation.'),
    limit: positiveInt.optional().describe('Use at most this many training tasks (after seeded shuffling).'),
    eval_limit: positiveInt.optional().describe('Use at most this many evaluation tasks (a fixed, seeded subset).'),
    options: componentOptions.default({}).describe('Dataset-specific options (e.g. arith difficulty, tau2 domain).'),
    format: z
      .enum(['jsonl', 'json', 'csv', 'parquet'])
      .optional()
      .describe('file: format of path; default from its extension (.jsonl, .json, .csv, .parquet).'),
    fields: DatasetFieldsSchema.optional().describe('file: which columns of each row are the prompt, the answer, the id and the metadata.'),
    prompt_template: z
      .string()
      .optional()
      .describe('file: first user message with {{column}} placeholders filled from each row; default: the prompt column as is.'),
    split_by: DatasetSplitSchema.optional().describe(
      'file: how rows divide into split and eval_split: {field: column} (rows whose column equals the split name), {file: path} (eval rows in a second file), or {fraction: 0.1} (a seeded held-out share). Absent: every split is the whole file.',
    ),
  })
  .describe('Where tasks come from.');

const McpServerSchema = z.union([
  z.strictObject({
    command: z.string().min(1).describe('Executable that starts the MCP server over stdio (started with the run, stopped after it).'),
    args: z.array(z.string()).default([]).describe('Arguments of the server command.'),
    env: z.record(z.string(), z.string()).optional().describe('Extra environment variables for the server process.'),
    cwd: z.string().optional().describe('Working directory of the server process, relative to the recipe; default: the recipe directory.'),
  }),
  z.strictObject({
    url: z.string().url().describe('URL of a running MCP server (streamable HTTP).'),
    headers: z.record(z.string(), z.string()).optional().describe('HTTP headers sent with every request (e.g. authorization).'),
  }),
]);

export const ToolSchema = z
  .strictObject({
    name: z.string().min(1).optional().describe('Registered tool name, e.g. calculator, run_python (or give module or mcp).'),
    options: componentOptions.default({}).describe('Options for this tool.'),
    module: z.string().min(1).optional().describe('TypeScript or JavaScript file, relative to the recipe, exporting Strands tools (tool() from @strands-agents/sdk).'),
    export: z.string().min(1).optional().describe('module: the export holding a tool, an array of tools, or a function (env) => tools called per episode; default: every exported tool.'),
    mcp: McpServerSchema.optional().describe('An MCP server whose tools the agent gets: {command, args, env, cwd} (stdio) or {url} (HTTP).'),
    prefix: z.string().min(1).optional().describe('mcp: prefix added to every tool name as <prefix>_<tool>, to avoid clashes.'),
    timeout_s: positiveNumber.default(60).describe('Seconds one call of these tools may take; a slower call becomes an error result the model sees.'),
  })
  .superRefine(exactlyOne(['name', 'module', 'mcp'], 'a tool'))
  .describe('One tool the agent may call: a registered name, a module of your own, or an MCP server.');

const PromptSchema = z.union([
  z.string(),
  z.strictObject({ file: z.string().min(1).describe('File holding the prompt text, relative to the recipe.') }),
]);

export const AgentSchema = z
  .strictObject({
    system_prompt: PromptSchema.optional().describe('System prompt, inline or {file: path}; {{field}} placeholders take task fields.'),
    max_turns: positiveInt.default(4).describe('Most model calls per episode.'),
    max_new_tokens: positiveInt.default(512).describe('Most tokens generated per model call.'),
    max_total_tokens: positiveInt.optional().describe('Most tokens in a whole episode (prompt included); default: the engine max_model_len.'),
    tool_call_format: z.enum(['hermes']).default('hermes').describe('How tool calls are written in the model output.'),
    chat_template_kwargs: componentOptions.default({}).describe('Extra chat template variables, e.g. {enable_thinking: false}.'),
  })
  .describe('The agent loop around the model.');

export const JudgeSchema = z.strictObject({
  url: z.string().url().describe('Base URL of an OpenAI-compatible server including /v1 (POST <url>/chat/completions).'),
  model: z.string().min(1).describe('Model name sent in requests.'),
  rubric: z.string().min(1).describe('What a good answer is; the judge replies with SCORE: <number> between 0 and max_score.'),
  max_score: positiveNumber.default(1).describe('Top of the judge\'s scale; the reward is the parsed score divided by it.'),
  api_key_env: z.string().min(1).optional().describe('Environment variable holding the API key sent as a bearer token.'),
  temperature: z.number().nonnegative().default(0).describe('Judge sampling temperature (0 keeps scores repeatable).'),
  max_tokens: positiveInt.default(256).describe('Most tokens in the judge\'s reply.'),
  timeout_s: positiveNumber.default(60).describe('Seconds one judge request may take.'),
});

/** The ways of naming one reward: registered, a module function, a command, or an LLM judge. */
const rewardSourceKeys = {
  module: z.string().min(1).optional().describe('TypeScript or JavaScript file, relative to the recipe, exporting a reward function (outcome) => number | {part: number}.'),
  export: z.string().min(1).optional().describe('module: name of the exported function; default: the default export.'),
  command: z
    .array(z.string())
    .min(1)
    .optional()
    .describe('Command run per episode: the episode as JSON on stdin, a number or JSON on stdout.'),
  cwd: z.string().min(1).optional().describe('command: working directory, relative to the recipe that names the command; default: that recipe\'s directory (so `[python3, grade.py]` finds grade.py beside it).'),
  timeout_s: positiveNumber.default(30).describe('command: seconds one scoring may take.'),
  judge: JudgeSchema.optional().describe('An LLM judge on an OpenAI-compatible URL scoring the final answer against a rubric.'),
};

const RewardComponentSchema = z
  .strictObject({
    name: z.string().min(1).optional().describe('Registered reward name (or give module, command or judge).'),
    weight: z.number().default(1).describe('Weight of this component in the sum.'),
    options: componentOptions.default({}).describe('Options for this reward.'),
    label: z.string().min(1).optional().describe('Name this component\'s part is logged under; default: the reward name, export, script or judge.'),
    ...rewardSourceKeys,
  })
  .superRefine(exactlyOne(['name', 'module', 'command', 'judge'], 'a reward component'));

export const RewardSchema = z
  .strictObject({
    name: z.string().min(1).optional().describe('Registered reward: math_answer, code_tests, tau2, ... (or module, command, judge, components).'),
    options: componentOptions.default({}).describe('Options for the named reward.'),
    ...rewardSourceKeys,
    components: z.array(RewardComponentSchema).optional().describe('Weighted sum of several rewards; each part is logged.'),
    success_threshold: z.number().default(1).describe('An episode with reward >= this counts as a success (accuracy, filtered SFT).'),
  })
  .superRefine(exactlyOne(['name', 'module', 'command', 'judge', 'components'], 'the reward', true))
  .describe('How a finished episode is scored.');

export const AlgorithmName = z.enum(['grpo', 'dr_grpo', 'rloo', 'reinforce', 'filtered_sft', 'sft']);
export const LossAggregation = z.enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm']);

export const LoraSchema = z.strictObject({
  rank: positiveInt.default(16).describe('LoRA rank r.'),
  alpha: positiveNumber.default(32).describe('LoRA alpha; the update is scaled by alpha / rank.'),
  dropout: z.number().min(0).max(1).default(0).describe('Dropout on the LoRA input.'),
  target_modules: z.array(z.string()).default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']).describe('Linear layers that get adapters.'),
});

export const AlgorithmSchema = z
  .strictObject({
    name: AlgorithmName.default('grpo').describe('Preset: grpo, dr_grpo, rloo, reinforce, filtered_sft, or sft (supervised warm start on the dataset\'s reference conversations); its settings appear in resolved.yaml.'),
    group_size: positiveInt.default(8).describe('Episodes per task; advantages compare episodes within a group.'),
    baseline: z.enum(['group_mean', 'leave_one_out', 'batch_mean', 'none']).optional().describe('Reward baseline; default from the preset.'),
    std_normalize: z.boolean().optional().describe('Divide advantages by the group reward std; default from the preset.'),
    loss_aggregation: LossAggregation.optional().describe('How token losses become one number; default from the preset.'),
    drop_zero_variance_groups: z.boolean().optional().describe('Skip groups whose rewards are all equal (no signal); default from the preset.'),
    clip_low: z.number().nonnegative().default(0.2).describe('PPO clip epsilon below 1 for the importance ratio.'),
    clip_high: z.number().nonnegative().default(0.28).describe('PPO clip epsilon above 1 (clip-higher keeps exploration).'),
    tis_cap: positiveNumber.optional().describe('Truncated importance sampling cap on trainer/engine probability ratios; off when absent.'),
    kl_coef: z.number().nonnegative().default(0).describe('Weight of the KL penalty to the frozen reference model; 0 = no reference model.'),
    kl_estimator: z.enum(['k1', 'k3']).default('k3').describe('KL estimator when kl_coef > 0.'),
    learning_rate: positiveNumber.default(1e-5).describe('AdamW learning rate.'),
    lr_schedule: z.enum(['constant', 'cosine']).default('constant').describe('Learning-rate schedule after warmup.'),
    warmup_steps: nonNegativeInt.default(0).describe('Linear warmup steps.'),
    weight_decay: z.number().nonnegative().default(0).describe('AdamW weight decay.'),
    grad_clip: positiveNumber.default(1).describe('Clip the global gradient norm to this value.'),
    micro_batch_tokens: positiveInt.default(8192).describe('Token budget per micro-batch; gradients accumulate over micro-batches.'),
    updates_per_step: positiveInt.default(1).describe('Optimizer passes over each step\'s batch (more = more off-policy).'),
    lora: LoraSchema.optional().describe('Train a LoRA adapter instead of all weights.'),
  })
  .describe('The RL algorithm and optimisation.');

export const RolloutSchema = z
  .strictObject({
    concurrency: positiveInt.default(32).describe('Episodes running at once.'),
    temperature: z.number().nonnegative().default(1).describe('Sampling temperature for training rollouts.'),
    top_p: z.number().gt(0).max(1).default(1).describe('Nucleus sampling; keep 1 so behaviour logprobs match the full distribution.'),
    top_k: z.number().int().min(-1).default(-1).describe('Top-k sampling; -1 = off.'),
    episode_timeout_s: positiveNumber.default(300).describe('Wall-clock limit for one episode; a timed-out episode is failed.'),
    request_timeout_s: positiveNumber.default(120).describe('Limit for one engine request.'),
    on_failure: z.enum(['zero', 'exclude']).default('zero').describe('A failed episode (engine error, timeout) scores 0 or is left out of its group.'),
    // Earlier atk versions wrote it into every resolved.yaml with its only honoured value; accepted so those runs reload.
    max_staleness: z
      .literal(0, { error: 'only 0: atk collects every step\'s episodes from the newest policy' })
      .optional()
      .describe('Retired: only 0 is accepted (every step\'s episodes come from the newest policy); kept so older runs\' resolved.yaml still loads.'),
  })
  .describe('How episodes are collected.');

export const TrainSchema = z
  .strictObject({
    steps: positiveInt.default(100).describe('Training steps (one batch of rollouts and one update each).'),
    tasks_per_step: positiveInt.default(16).describe('Tasks drawn per step; each runs group_size episodes.'),
    eval_every: nonNegativeInt.default(0).describe('Evaluate every N steps; 0 = only before and after training.'),
    eval_before: z.boolean().default(true).describe('Evaluate the starting policy before the first step.'),
    eval_after: z.boolean().default(true).describe('Evaluate the final policy after the last step.'),
    save_every: nonNegativeInt.default(0).describe('Checkpoint every N steps; 0 = only at the end.'),
    keep_checkpoints: positiveInt.default(3).describe('Checkpoints kept on disk (oldest are deleted).'),
  })
  .describe('The training schedule.');

export const OutputSchema = z
  .strictObject({
    runs_dir: z.string().default('runs').describe('Directory holding run directories, relative to the current directory.'),
    trackers: z
      .array(z.enum(['tensorboard', 'wandb']))
      .default([])
      .describe('Experiment trackers fed every metric each step besides metrics.jsonl: tensorboard (event files in <run>/tb), wandb (the wandb Python client).'),
    wandb: z
      .strictObject({
        project: z.string().optional().describe('W&B project (default $WANDB_PROJECT, else atk).'),
        entity: z.string().optional().describe('W&B entity, a user or team (default $WANDB_ENTITY, else your default).'),
        name: z.string().optional().describe('W&B run name (default <recipe name>/<version>).'),
        tags: z.array(z.string()).default([]).describe('W&B run tags.'),
      })
      .optional()
      .describe('Where the wandb tracker logs; its config is the resolved recipe.'),
  })
  .superRefine(({ trackers, wandb }, ctx) => {
    if (wandb && !trackers.includes('wandb')) ctx.addIssue({ code: 'custom', path: ['wandb'], message: 'does nothing without wandb in output.trackers' });
  })
  .describe('Where results go.');

export const UserSimulatorSchema = z
  .strictObject({
    kind: z
      .enum(['policy', 'engine', 'url', 'scripted'])
      .default('policy')
      .describe("Who plays the customer: policy (the policy's own engine), engine (a second engine), url (an OpenAI-compatible chat server), scripted (fixed messages, for tests)."),
    url: z.string().url().optional().describe('url: base URL of an OpenAI-compatible server including /v1 (POST <url>/chat/completions).'),
    model: z.string().optional().describe('url: model name sent in requests; engine: model path or hub id of the second engine.'),
    engine: EngineSchema.optional().describe('engine: how the user model is served (a second vllm/sglang/url engine).'),
    messages: z.array(z.string()).optional().describe('scripted: the user messages in order; ###STOP### follows the last one.'),
    temperature: z.number().nonnegative().default(0).describe('User model sampling temperature (the reference uses 0).'),
    max_tokens: positiveInt.default(512).describe('Most tokens per user message.'),
    max_steps: positiveInt.default(200).describe('Most messages (agent, user and tool) in one conversation; a longer one ends unscored (reward 0).'),
    max_errors: positiveInt.default(10).describe('Most tool errors in one conversation; reaching it ends the episode unscored (reward 0).'),
  })
  .describe('The simulated user of multi-turn datasets such as tau2.');

export const RecipeSchema = z
  .strictObject({
    $schema: z.string().optional().describe('JSON Schema reference for editors; ignored by atk.'),
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be letters, digits, dot, dash or underscore')
      .describe('Recipe name; runs go to <runs_dir>/<name>/vNNN.'),
    extends: z.string().optional().describe('Base recipe to deep-merge under this one (maps merge, lists replace).'),
    seed: nonNegativeInt.default(0).describe('Seed for data order, sampling and initialisation.'),
    model: ModelSchema,
    dataset: DatasetSchema.prefault({}),
    tools: z.array(ToolSchema).default([]).describe('Tools the agent may call.'),
    agent: AgentSchema.prefault({}),
    user: UserSimulatorSchema.optional().describe('Simulated user for multi-turn datasets (tau2); absent for single-turn tasks.'),
    reward: RewardSchema.describe('How episodes are scored.'),
    algorithm: AlgorithmSchema.prefault({}),
    rollout: RolloutSchema.prefault({}),
    train: TrainSchema.prefault({}),
    output: OutputSchema.prefault({}),
  })
  .describe('An atk recipe.');

/** A validated recipe with every default filled in. */
export type Recipe = z.infer<typeof RecipeSchema>;
/** A recipe as written, before defaults. */
export type RecipeInput = z.input<typeof RecipeSchema>;
export type EngineConfig = z.infer<typeof EngineSchema>;
export type TrainerConfig = z.infer<typeof TrainerSchema>;
export type AlgorithmConfig = z.infer<typeof AlgorithmSchema>;
export type RolloutConfig = z.infer<typeof RolloutSchema>;
export type RewardConfig = z.infer<typeof RewardSchema>;
export type ToolConfig = z.infer<typeof ToolSchema>;
export type DatasetConfig = z.infer<typeof DatasetSchema>;
export type DatasetSplitConfig = z.infer<typeof DatasetSplitSchema>;
export type McpServerConfig = z.infer<typeof McpServerSchema>;
export type JudgeConfig = z.infer<typeof JudgeSchema>;
export type RewardComponentConfig = z.infer<typeof RewardComponentSchema>;
export type AgentConfig = z.infer<typeof AgentSchema>;
export type UserSimulatorConfig = z.infer<typeof UserSimulatorSchema>;
