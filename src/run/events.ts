/**
 * What a run reports, as data. The training loop and evaluation are async generators of these
 * events; the plain-line printer, the dashboard, `--json` output and the tests all consume the
 * same stream.
 */
export type RunEvent =
  | {
      readonly type: 'runStarted';
      readonly runDir: string;
      readonly startStep: number;
      readonly totalSteps: number;
      readonly resumed: boolean;
    }
  | { readonly type: 'phase'; readonly message: string }
  | { readonly type: 'stepStarted'; readonly step: number; readonly episodes: number }
  | {
      readonly type: 'episodeFinished';
      readonly step: number;
      readonly done: number;
      readonly total: number;
      readonly reward: number;
      readonly failed: boolean;
    }
  | { readonly type: 'stepFinished'; readonly step: number; readonly metrics: StepMetrics }
  | { readonly type: 'evalStarted'; readonly label: string; readonly tasks: number }
  | { readonly type: 'evalFinished'; readonly label: string; readonly step: number; readonly summary: EvalSummary }
  | { readonly type: 'checkpointSaved'; readonly step: number; readonly path: string }
  | { readonly type: 'warning'; readonly message: string }
  | {
      readonly type: 'runFinished';
      readonly status: 'finished' | 'failed' | 'interrupted';
      readonly summary: Readonly<Record<string, unknown>>;
    };

/** One line of metrics.jsonl for a training step. */
export interface StepMetrics {
  readonly kind: 'train';
  /** Steps done including this one (1-based); eval lines use the same count, 0 = before training. */
  readonly step: number;
  /** When the step finished (ISO 8601): curves against wall-clock time, across resumes. */
  readonly at: string;
  readonly policy_version: number;
  readonly reward_mean: number;
  readonly accuracy: number;
  readonly episodes: number;
  readonly failed_episodes: number;
  readonly groups: number;
  readonly dropped_groups: number;
  readonly trained_sequences: number;
  readonly tool_calls_per_episode: number;
  readonly tool_error_rate: number;
  readonly mean_turns: number;
  /** Multi-turn steps only (see conversationFigures): user messages per episode, policy rules broken per episode. */
  readonly user_turns_per_episode?: number;
  readonly policy_violations_per_episode?: number;
  readonly response_tokens_mean: number;
  readonly generated_tokens: number;
  readonly generation_tokens_per_s: number;
  /** Policy versions between the oldest turn of each episode and the policy trained on it: mean and max over the step's episodes. */
  readonly staleness_mean: number;
  readonly staleness_max: number;
  /** Groups dropped because an episode was sampled more than rollout.max_staleness versions back. */
  readonly stale_groups_dropped: number;
  /** Share of the step's wall time (since the previous step) with at least one episode running, and with the trainer updating or syncing. */
  readonly engine_busy_share: number;
  readonly trainer_busy_share: number;
  readonly episode_seconds_mean: number;
  readonly time_generation_s: number;
  readonly time_train_s: number;
  readonly time_sync_s: number;
  readonly time_step_s: number;
  /** Trainer metrics (loss, entropy, clip_fraction, grad_norm, mismatch_mean, ...), prefixed `train/`. */
  readonly [trainerMetric: `train/${string}`]: number;
  /** Calls of each tool per episode (mean over the step's episodes), prefixed `tool_calls/`. */
  readonly [toolCalls: `tool_calls/${string}`]: number;
  /**
   * Error results of each tool per episode (mean over the step's episodes; the tool threw, hung
   * past its timeout, returned nothing usable, or its call was rejected), prefixed `tool_errors/`:
   * present for every tool called in the step, 0 when none of its calls failed.
   */
  readonly [toolErrors: `tool_errors/${string}`]: number;
  /** Failed episodes by the layer that failed (engine, timeout, template, parser, sdk, tool, reward, user, scheduler), prefixed `failed/`. */
  readonly [failedByKind: `failed/${string}`]: number;
  /** Mean of each named reward part, prefixed `reward/`. */
  readonly [rewardPart: `reward/${string}`]: number;
  /**
   * What the step's weight sync moved into launched engines: `sync/bytes` (once, whatever the replicas), `sync/tensors`
   * (a broadcast); and `sync/probe_max_abs_logprob_diff`, the largest gap between the engine's logprobs of the probe
   * sequence and the trainer's after the sync (policy/sync-probe.ts).
   */
  readonly [syncFigure: `sync/${string}`]: number;
  /**
   * With `algorithm.dynamic_sampling`: `dynamic_sampling/groups_sampled`, `groups_kept` (with a reward spread,
   * what the step trains on), `rounds`, `ran_out` (1 when the rounds ran out before `train.tasks_per_step` were kept).
   */
  readonly [dynamicSampling: `dynamic_sampling/${string}`]: number;
  /**
   * algorithm distill: `distill/reverse_kl`, the mean over trained tokens of log pi_student - log pi_teacher
   * (the sampled-token estimate of KL(student || teacher), before the step's update), and `distill/tokens`.
   */
  readonly [distill: `distill/${string}`]: number;
  /** With `dataset.curriculum`: `curriculum/skipped_solved` and `curriculum/skipped_unsolved`, tasks the step's draws passed over. */
  readonly [curriculum: `curriculum/${string}`]: number;
  /** With either: positions of the data stream read after the step (tasks drawn plus tasks skipped). */
  readonly 'data/position'?: number;
  /** atk's own memory when the step was recorded: `atk/rss_mb` (resident) and `atk/heap_used_mb` (the JS heap); a long run's leak shows here. */
  readonly [processFigure: `atk/${string}`]: number;
}

/** Figures of one evaluation. */
export interface EvalSummary {
  readonly label: string;
  readonly split: string;
  readonly tasks: number;
  readonly samples: number;
  readonly reward_mean: number;
  readonly accuracy: number;
  readonly pass_at_k: Readonly<Record<string, number>>;
  readonly mean_at_k: number;
  readonly tool_calls_per_episode: number;
  readonly tool_error_rate: number;
  readonly mean_turns: number;
  readonly mean_tokens: number;
  readonly failed_episodes: number;
  /** Failed episodes by the layer that failed, as a training step counts them (only kinds that occurred). */
  readonly [failedByKind: `failed/${string}`]: number;
  /** External agents only: history rewrites per episode (see src/gateway). */
  readonly 'gateway/history_rewrites'?: number;
  /** Multi-turn evals only (see conversationFigures): user messages per episode, policy rules broken per episode. */
  readonly user_turns_per_episode?: number;
  readonly policy_violations_per_episode?: number;
  /**
   * algorithm distill: mean over the eval episodes' generated tokens of log pi_student - log pi_teacher, the
   * student's logprobs being those of its own (greedy) choices under its temperature-1 distribution.
   */
  readonly teacher_reverse_kl?: number;
}
