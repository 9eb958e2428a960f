/**
 * The recipe schema: the single source of truth for what a recipe may say. Types are
 * `z.infer` of it, `atk schema` exports it as JSON Schema, and the recipe reference in
 * docs/recipes.md is checked against it by a test. Every key carries a `.describe()` text for those uses.
 *
 * Keys are snake_case on both sides of the TypeScript/Python boundary.
 */
import { z } from 'zod';
import { ClusterSchema } from './cluster-schema.js';
import {
  AgentSchema,
  type DatasetSplitSchema,
  DatasetSchema,
  type ExternalAgentSchema,
  type JudgeSchema,
  type McpServerSchema,
  type RewardComponentSchema,
  RewardSchema,
  ToolSchema,
} from './component-schemas.js';
import { DistillSchema, TeacherSchema } from './distill-schema.js';
import { EngineSchema, ModelSchema, type TrainerSchema } from './model-schema.js';
import { MismatchSchema } from './objective-schemas.js';
import { nonNegativeInt, positiveInt, positiveNumber } from './schema-parts.js';

export * from './component-schemas.js';
export * from './model-schema.js';

export const AlgorithmName = z.enum([
  'grpo',
  'dr_grpo',
  'rloo',
  'reinforce',
  'gspo',
  'cispo',
  'distill',
  'filtered_sft',
  'greedy_sft',
  'sft',
]);
export const LossAggregation = z.enum([
  'token-sum',
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
]);

export const LoraSchema = z.strictObject({
  rank: positiveInt.default(16).describe('LoRA rank r.'),
  alpha: positiveNumber.default(32).describe('LoRA alpha; the update is scaled by alpha / rank.'),
  dropout: z.number().min(0).max(1).default(0).describe('Dropout on the LoRA input.'),
  target_modules: z
    .array(z.string())
    .default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'])
    .describe('Linear layers that get adapters.'),
  layers_to_transform: z
    .array(nonNegativeInt)
    .min(1)
    .optional()
    .describe(
      "Decoder layers (0-based indices) whose target modules get adapters, as peft's option of that name; absent = all. Adapters in the top layers only also spare the backward pass through the layers below them: an SFT step of SmolLM2 with adapters in its top 10 of 30 layers took 12.1-13.2 CPU-seconds against 20.1-21.3 with all.",
    ),
});

export const DynamicSamplingSchema = z.strictObject({
  max_rounds: positiveInt
    .default(3)
    .describe(
      'Most sampling rounds per step, the first included; each refill round draws as many new tasks as the step still lacks groups with a reward spread.',
    ),
});

export const AlgorithmSchema = z
  .strictObject({
    name: AlgorithmName.default('grpo').describe(
      "Preset: grpo, dr_grpo, rloo, reinforce (-A log pi, no ratio or clip, batch-mean baseline), gspo (sequence-level ratio and clip, Zheng et al. 2025), cispo (clipped, detached importance weight on REINFORCE, MiniMax-M1), distill (on-policy distillation: per-token advantage log pi_teacher - log pi_student, see algorithm.distill and teacher), filtered_sft, greedy_sft (one greedy episode per task, cross-entropy on the successful ones: trains what eval decodes), or sft (supervised warm start on the dataset's reference conversations); its settings appear in resolved.yaml and `atk explain` prints the objective.",
    ),
    group_size: positiveInt.default(8).describe('Episodes per task; advantages compare episodes within a group.'),
    baseline: z
      .enum(['group_mean', 'leave_one_out', 'batch_mean', 'none'])
      .optional()
      .describe('Reward baseline; default from the preset.'),
    std_normalize: z
      .boolean()
      .optional()
      .describe('Divide advantages by the group reward std; default from the preset.'),
    std: z
      .enum(['unbiased', 'population'])
      .default('unbiased')
      .describe(
        "The group std that std_normalize divides by: unbiased divides the squared deviations by n - 1 (torch.std; verl, TRL and slime), population by n. GRPO's paper does not say which.",
      ),
    loss_aggregation: LossAggregation.optional().describe(
      'How token losses become one number; default from the preset.',
    ),
    drop_zero_variance_groups: z
      .boolean()
      .optional()
      .describe('Skip groups whose rewards are all equal (no signal); default from the preset.'),
    clip_low: z
      .number()
      .nonnegative()
      .optional()
      .describe(
        'Clip epsilon below 1 of the importance ratio: 1 - clip_low; default from the preset: 0.2, gspo 3e-4 (its ratio is per sequence), cispo 1 (no lower clip of its weight).',
      ),
    clip_high: z
      .number()
      .nonnegative()
      .optional()
      .describe(
        'Clip epsilon above 1: 1 + clip_high (clip-higher keeps exploration); default from the preset: 0.28, gspo 4e-4, cispo 4.',
      ),
    dual_clip: z
      .number()
      .gt(1)
      .optional()
      .describe(
        "Dual-clip PPO's c (Ye et al. 2020, arXiv 1912.09729; verl uses 3): a token with a negative advantage gets loss at most -c A, however far its ratio has grown past c. PPO's loss only (not gspo, cispo, reinforce). Absent = off, as in PPO's paper.",
      ),
    tis_cap: positiveNumber
      .optional()
      .describe('Older spelling of mismatch: {mode: tis, level: token, low: 0, high: tis_cap}; give one of the two.'),
    mismatch: MismatchSchema.optional(),
    mask_truncated: z
      .boolean()
      .default(false)
      .describe(
        "Leave episodes cut off by a generation limit (finish reason truncated: a turn hit agent.max_new_tokens; or maxTotalTokens) out of the loss; they still count in their group's baseline (DAPO's overlong filtering).",
      ),
    segment_weighting: z
      .enum(['by_tokens', 'equal'])
      .default('by_tokens')
      .describe(
        "How an episode's trajectory segments (a history rewrite, a stripped reasoning, a context window) share the episode's weight in the loss, which stays what one unsplit sequence would have: by_tokens in proportion to their generated tokens, equal each the same.",
      ),
    kl_coef: z
      .number()
      .nonnegative()
      .default(0)
      .describe('Weight of the KL penalty to the frozen reference model; 0 = no reference model.'),
    kl_estimator: z
      .enum(['k1', 'k2', 'k3'])
      .default('k3')
      .describe(
        'KL estimator when kl_coef > 0 (Schulman 2020): k1 = log(pi/pi_ref), k2 = log(pi/pi_ref)^2 / 2, k3 = pi_ref/pi - log(pi_ref/pi) - 1.',
      ),
    learning_rate: positiveNumber.default(1e-5).describe('AdamW learning rate.'),
    lr_schedule: z.enum(['constant', 'cosine']).default('constant').describe('Learning-rate schedule after warmup.'),
    warmup_steps: nonNegativeInt.default(0).describe('Linear warmup steps.'),
    weight_decay: z.number().nonnegative().default(0).describe('AdamW weight decay.'),
    grad_clip: positiveNumber.default(1).describe('Clip the global gradient norm to this value.'),
    micro_batch_tokens: z
      .union([positiveInt, z.literal('auto')])
      .default('auto')
      .describe(
        'Token budget per micro-batch; gradients accumulate over micro-batches. auto = sized from free memory (GPU on CUDA; on CPU the available RAM, at most 1 GiB of activations, which keeps the matmuls busy).',
      ),
    pack_sequences: z
      .boolean()
      .default(false)
      .describe(
        'Pack sequences end to end into rows as long as the longest sequence or the model width, whichever is longer (per-sequence positions, block-diagonal mask), instead of padding each one; builtin backend, one device.',
      ),
    updates_per_step: positiveInt
      .default(1)
      .describe("Optimizer passes over each step's batch (more = more off-policy)."),
    dynamic_sampling: DynamicSamplingSchema.optional().describe(
      "DAPO's dynamic sampling (arXiv 2503.14476): a group whose rewards are all equal has no advantage, so the step keeps drawing new tasks from the data stream and sampling their groups until train.tasks_per_step groups have a reward spread, or max_rounds rounds have run (then it trains on those it has and warns). Metrics dynamic_sampling/groups_sampled, groups_kept, rounds, ran_out. Absent = off.",
    ),
    distill: DistillSchema.optional(),
    lora: LoraSchema.optional().describe('Train a LoRA adapter instead of all weights.'),
  })
  .superRefine((a, ctx) => {
    if (a.tis_cap !== undefined && a.mismatch !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['tis_cap'],
        message:
          'give mismatch or tis_cap, not both (tis_cap C is mismatch {mode: tis, level: token, low: 0, high: C})',
      });
  })
  .describe('The RL algorithm and optimisation.');

export const RolloutSchema = z
  .strictObject({
    concurrency: positiveInt.default(32).describe('Episodes running at once.'),
    temperature: z.number().nonnegative().default(1).describe('Sampling temperature for training rollouts.'),
    greedy_per_group: nonNegativeInt
      .max(1)
      .default(0)
      .describe(
        'Episodes of each group decoded greedily (temperature 0, as eval decodes) beside the sampled ones, so the update also scores the answer eval will give; 0 or 1 (a second greedy episode would repeat the first), fewer than group_size.',
      ),
    top_p: z
      .number()
      .gt(0)
      .max(1)
      .default(1)
      .describe('Nucleus sampling; keep 1 so behaviour logprobs match the full distribution.'),
    top_k: z.number().int().min(-1).default(-1).describe('Top-k sampling; -1 = off.'),
    episode_timeout_s: z
      .union([positiveNumber, z.literal('auto')])
      .default('auto')
      .describe(
        'Wall-clock limit for one episode; a timed-out episode is failed. auto = 300 s, times parameters / 10M for the embedded engine on a CPU (a 135M model: ~67 min).',
      ),
    request_timeout_s: z
      .union([positiveNumber, z.literal('auto')])
      .default('auto')
      .describe(
        'Limit for one engine request. auto = 120 s, times parameters / 10M for the embedded engine on a CPU (a 135M model: ~27 min).',
      ),
    reward_timeout_s: positiveNumber
      .default(600)
      .describe('Limit for scoring one episode; a reward past it fails the episode (kind reward).'),
    on_failure: z
      .enum(['zero', 'exclude'])
      .default('zero')
      .describe('A failed episode (engine error, timeout) scores 0 or is left out of its group.'),
    workers: nonNegativeInt
      .default(0)
      .describe(
        "Worker threads that run episodes (the agent loop, rendering, tokenising, tools, reward), each with its own tools and tokenizer; the run's thread routes, names and tracks every engine request and the worker sends it. 0 = episodes run on the run's thread. Pays when atk's own CPU per turn limits throughput: fast engines and a core per worker.",
      ),
    max_staleness: nonNegativeInt
      .default(0)
      .describe(
        'Asynchronous rollouts: episodes for the next k steps are collected while a step trains; a group sampled more than k policy versions before the one it trains is dropped and counted. 0 = collect, then train, then sync. k > 0 sets algorithm.mismatch to {mode: tis, level: token, low: 0, high: 2} unless given.',
      ),
  })
  .describe('How episodes are collected.');

export const TrainSchema = z
  .strictObject({
    steps: positiveInt.default(100).describe('Training steps (one batch of rollouts and one update each).'),
    tasks_per_step: positiveInt.default(16).describe('Tasks drawn per step; each runs group_size episodes.'),
    time_budget_s: positiveNumber
      .optional()
      .describe(
        'Stop after the first step that brings training time (steps, evals between them excluded) to this many seconds, then checkpoint and evaluate as after the last step; compares algorithms at equal wall time. Absent = train.steps only.',
      ),
    eval_every: nonNegativeInt.default(0).describe('Evaluate every N steps; 0 = only before and after training.'),
    eval_before: z.boolean().default(true).describe('Evaluate the starting policy before the first step.'),
    eval_after: z.boolean().default(true).describe('Evaluate the final policy after the last step.'),
    save_every: nonNegativeInt.default(0).describe('Checkpoint every N steps; 0 = only at the end.'),
    keep_checkpoints: positiveInt.default(3).describe('Checkpoints kept on disk (oldest are deleted).'),
    keep_trajectories: z
      .union([
        z.literal('all'),
        z.strictObject({ last: positiveInt.describe('Keep the newest N steps.') }),
        z.strictObject({ every: positiveInt.describe('Keep steps that are multiples of N.') }),
      ])
      .default({ last: 100 })
      .describe(
        'Training-step trajectory files kept on disk (trajectories/step-NNNNN.jsonl): all, {last: N} or {every: N}; the latest step is always kept, evals and metrics.jsonl always are. The default bounds a long run at 100 step files.',
      ),
  })
  .describe('The training schedule.');

export const OutputSchema = z
  .strictObject({
    runs_dir: z
      .string()
      .default('runs')
      .describe('Directory holding run directories, relative to the current directory.'),
    trackers: z
      .array(z.enum(['tensorboard', 'wandb']))
      .default([])
      .describe(
        'Experiment trackers fed every metric each step besides metrics.jsonl: tensorboard (event files in <run>/tb), wandb (the wandb Python client).',
      ),
    wandb: z
      .strictObject({
        project: z.string().optional().describe('W&B project (default $WANDB_PROJECT, else atk).'),
        entity: z
          .string()
          .optional()
          .describe('W&B entity, a user or team (default $WANDB_ENTITY, else your default).'),
        name: z.string().optional().describe('W&B run name (default <recipe name>/<version>).'),
        tags: z.array(z.string()).default([]).describe('W&B run tags.'),
      })
      .optional()
      .describe('Where the wandb tracker logs; its config is the resolved recipe.'),
  })
  .superRefine(({ trackers, wandb }, ctx) => {
    if (wandb && !trackers.includes('wandb'))
      ctx.addIssue({ code: 'custom', path: ['wandb'], message: 'does nothing without wandb in output.trackers' });
  })
  .describe('Where results go.');

export const UserSimulatorSchema = z
  .strictObject({
    kind: z
      .enum(['policy', 'engine', 'url', 'scripted'])
      .default('policy')
      .describe(
        "Who plays the customer: policy (the policy's own engine), engine (a second engine), url (an OpenAI-compatible chat server), scripted (user.messages, else the dataset's own scripted user, e.g. helpdesk's).",
      ),
    url: z
      .string()
      .url()
      .optional()
      .describe('url: base URL of an OpenAI-compatible server including /v1 (POST <url>/chat/completions).'),
    model: z
      .string()
      .optional()
      .describe('url: model name sent in requests; engine: model path or hub id of the second engine.'),
    engine: EngineSchema.optional().describe('engine: how the user model is served (a second vllm/sglang/url engine).'),
    messages: z
      .array(z.string())
      .optional()
      .describe('scripted: the user messages in order; ###STOP### follows the last one.'),
    temperature: z
      .number()
      .nonnegative()
      .default(0)
      .describe('User model sampling temperature (the reference uses 0).'),
    max_tokens: positiveInt.default(512).describe('Most tokens per user message.'),
    max_steps: positiveInt
      .default(200)
      .describe('Most messages (agent, user and tool) in one conversation; a longer one ends unscored (reward 0).'),
    max_errors: positiveInt
      .default(10)
      .describe('Most tool errors in one conversation; reaching it ends the episode unscored (reward 0).'),
  })
  .describe('The simulated user of multi-turn datasets such as tau2.');

export const RecipeSchema = z
  .strictObject({
    $schema: z.string().optional().describe('JSON Schema reference for editors; ignored by atk.'),
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be letters, digits, dot, dash or underscore')
      .describe('Recipe name; runs go to <runs_dir>/<name>/vNNN.'),
    extends: z
      .string()
      .optional()
      .describe('Base recipe to deep-merge under this one (maps merge, lists replace, a key set to null is removed).'),
    seed: nonNegativeInt.default(0).describe('Seed for data order, sampling and initialisation.'),
    model: ModelSchema,
    dataset: DatasetSchema.prefault({}),
    tools: z.array(ToolSchema).default([]).describe('Tools the agent may call.'),
    agent: AgentSchema.prefault({}),
    user: UserSimulatorSchema.optional().describe(
      'Simulated user for multi-turn datasets (tau2); absent for single-turn tasks.',
    ),
    teacher: TeacherSchema.optional().describe('The teacher of algorithm.name: distill; absent otherwise.'),
    reward: RewardSchema.describe('How episodes are scored.'),
    algorithm: AlgorithmSchema.prefault({}),
    rollout: RolloutSchema.prefault({}),
    train: TrainSchema.prefault({}),
    output: OutputSchema.prefault({}),
    cluster: ClusterSchema.prefault({}),
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
export type ExternalAgentConfig = z.infer<typeof ExternalAgentSchema>;
export type UserSimulatorConfig = z.infer<typeof UserSimulatorSchema>;
