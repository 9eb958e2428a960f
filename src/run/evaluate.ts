import { appendFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../runs/index.js';
import type { Task } from '../datasets/types.js';
import type { EpisodeGate } from '../rollout/async-collector.js';
import { collectRollout, rolloutOnThrow, type EpisodeKit, type Rollout } from '../rollout/collect.js';
import { meanPassAtK, reportedKs } from './eval-metrics.js';
import type { EvalSummary } from './events.js';
import { runGroups } from '../rollout/scheduler.js';
import { everyEpisodeFailedInEngine } from '../rollout/engine-failure.js';
import { teacherReverseKl } from '../rollout/teacher-scored.js';
import {
  conversationFigures,
  failuresByKind,
  gatewayFigures,
  segmentFigures,
  rolloutFigures,
  trajectoryRecord,
} from './step-record.js';
import { episodeSeed } from '../rollout/task-stream.js';
import { TokenTrajectory } from '../tokens/trajectory.js';

export interface EvalOptions {
  readonly label: string;
  readonly split: string;
  readonly step: number;
  readonly policyVersion: number;
  /** Samples per task (k); pass@k is reported for k = 1, 2, 4, ... up to it. */
  readonly samples: number;
  /** 0 = greedy, the default for evaluation. */
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
  readonly concurrency: number;
  readonly seed: number;
  /** Where results.jsonl and summary.json go; nothing is written when absent. */
  readonly outDir?: string;
  readonly signal?: AbortSignal;
  /**
   * Keep the episodes already in `outDir/results.jsonl` that finished without a harness failure
   * (matched by task id and sample) and run only the missing or errored ones.
   */
  readonly resume?: boolean;
  /**
   * Runs each episode, supplying its abort signal (default: at once, with `signal`). The training loop
   * passes its step collector's, so the eval before training and the first step share one pool of
   * `concurrency` slots and the engine never runs more episodes than the recipe allows.
   */
  readonly gate?: EpisodeGate;
  /** Called as each episode finishes (kept ones included), for progress displays. */
  readonly onEpisode?: (done: number, total: number, rollout: Rollout) => void;
  /** Rejects once the trainer or an engine is lost (RunningPolicy.lost): the eval fails with it then. */
  readonly lost?: Promise<never> | undefined;
}

/**
 * Score the policy on a set of tasks with the same agent loop, tools and reward as training.
 * Writes one results.jsonl line per episode (with its trajectory) and summary.json.
 * @throws ProviderError when every episode failed in the engine, or once `lost` rejects.
 */
export async function evaluate(kit: EpisodeKit, tasks: readonly Task[], options: EvalOptions): Promise<EvalSummary> {
  const outDir = options.outDir;
  const partial = outDir ? join(outDir, PARTIAL_RESULTS) : undefined;
  const kept =
    options.resume && outDir
      ? await keptResults([join(outDir, 'results.jsonl'), partial!])
      : new Map<string, PreviousResult>();
  if (outDir) await mkdir(outDir, { recursive: true });
  if (partial) await writeFile(partial, [...kept.values()].map((r) => `${JSON.stringify(r)}\n`).join(''));
  const total = tasks.length * options.samples;
  let done = 0;
  // Each finished episode is appended at once, so an interrupted eval leaves what --resume keeps.
  let appending = Promise.resolve();
  const lines = new Map<Rollout, string>(); // serialised once: the partial file now, results.jsonl at the end
  const onDone = (_slot: unknown, rollout: Rollout): void => {
    options.onEpisode?.(++done, total, rollout);
    const reused = kept.get(resultKey(rollout.task.id, rollout.sample));
    if (!outDir || reused) return;
    const line = JSON.stringify(trajectoryRecord(rollout, options.step, null));
    lines.set(rollout, line);
    appending = appending.then(() => appendFile(partial!, `${line}\n`));
  };
  const episodes = runGroups(
    tasks,
    options.samples,
    options.concurrency,
    async ({ task, group, sample }) => {
      const previous = kept.get(resultKey(task.id, sample));
      if (previous) return rolloutFromResult(previous, task, group);
      const run = (signal: AbortSignal | undefined): Promise<Rollout> =>
        collectRollout(kit, {
          task,
          group,
          sample,
          seed: episodeSeed(options.seed, -1 - options.step, group, sample),
          temperature: options.temperature,
          topP: options.topP,
          topK: options.topK,
          policyVersion: options.policyVersion,
          ...(signal ? { signal } : {}),
        });
      return options.gate ? options.gate(run) : run(options.signal);
    },
    onDone,
    rolloutOnThrow(options.policyVersion),
  );
  const groups = await (options.lost ? Promise.race([episodes, options.lost]) : episodes);
  await appending;
  // The episodes stay in the partial results file; a summary of 0% would blame the policy for a broken engine.
  const broken = everyEpisodeFailedInEngine(groups.flat(), `eval ${options.label}`);
  if (broken) throw broken;
  const summary = summarize(groups, options);
  if (outDir) {
    await writeResults(
      outDir,
      groups,
      summary,
      (r) => lines.get(r) ?? JSON.stringify(trajectoryRecord(r, options.step, null)),
    );
    await rm(partial!, { force: true });
  }
  return summary;
}

/** The eval figures of a set of groups (one group = the samples of one task). */
export function summarize(
  groups: readonly (readonly Rollout[])[],
  options: Pick<EvalOptions, 'label' | 'split' | 'samples'>,
): EvalSummary {
  const rollouts = groups.flat();
  const figures = rolloutFigures(rollouts);
  const perTask = groups.map((g) => ({ n: g.length, c: g.filter((r) => r.success).length }));
  const passAtK: Record<string, number> = {};
  for (const k of reportedKs(options.samples)) passAtK[`pass@${k}`] = meanPassAtK(perTask, k);
  return {
    label: options.label,
    split: options.split,
    tasks: groups.length,
    samples: options.samples,
    reward_mean: figures.reward_mean,
    accuracy: figures.accuracy,
    pass_at_k: passAtK,
    mean_at_k: figures.accuracy,
    tool_calls_per_episode: figures.tool_calls_per_episode,
    tool_error_rate: figures.tool_error_rate,
    mean_turns: figures.mean_turns,
    mean_tokens: figures.response_tokens_mean,
    failed_episodes: figures.failed_episodes,
    ...failuresByKind(rollouts),
    ...gatewayFigures(rollouts),
    ...segmentFigures(rollouts),
    ...conversationFigures(rollouts),
    ...teacherFigures(rollouts),
  };
}

/** algorithm distill: the eval episodes' reverse KL to the teacher that scored them. */
function teacherFigures(rollouts: readonly Rollout[]): Pick<EvalSummary, 'teacher_reverse_kl'> {
  const kl = teacherReverseKl(rollouts);
  return kl === undefined ? {} : { teacher_reverse_kl: kl };
}

async function writeResults(
  outDir: string,
  groups: readonly (readonly Rollout[])[],
  summary: EvalSummary,
  lineOf: (rollout: Rollout) => string,
): Promise<void> {
  const lines = groups.flat().map(lineOf);
  await writeFileAtomic(join(outDir, 'results.jsonl'), lines.length ? `${lines.join('\n')}\n` : '');
  await writeJsonAtomic(join(outDir, 'summary.json'), summary);
}

/** Episodes of an eval in progress, one line each as they finish; results.jsonl replaces it at the end. */
export const PARTIAL_RESULTS = 'results.partial.jsonl';

/** A results.jsonl line as resume reads it back (the fields `trajectoryRecord` writes). */
interface PreviousResult {
  readonly task_id: string;
  readonly sample: number;
  readonly policy_version: number;
  readonly reward: number;
  readonly reward_parts: Record<string, number>;
  readonly reward_info?: Record<string, unknown>;
  readonly success: boolean;
  readonly failed: boolean;
  readonly finish_reason: string;
  readonly stats: Rollout['episode']['stats'];
  readonly messages: unknown[];
  readonly trajectory: unknown;
}

function resultKey(taskId: string, sample: number): string {
  return `${taskId}\u0000${sample}`;
}

/** Episodes of an earlier, possibly interrupted, eval worth keeping: complete lines without a harness failure. */
async function keptResults(files: readonly string[]): Promise<Map<string, PreviousResult>> {
  const text = (await Promise.all(files.map((f) => readFile(f, 'utf8').catch(() => '')))).join('\n');
  const kept = new Map<string, PreviousResult>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const result = JSON.parse(line) as PreviousResult;
      if (!result.failed && typeof result.task_id === 'string' && typeof result.sample === 'number')
        kept.set(resultKey(result.task_id, result.sample), result);
    } catch {
      // A torn line of a killed writer: that episode runs again.
    }
  }
  return kept;
}

function rolloutFromResult(result: PreviousResult, task: Task, group: number): Rollout {
  return {
    task,
    group,
    sample: result.sample,
    policyVersion: result.policy_version,
    reward: result.reward,
    parts: result.reward_parts,
    ...(result.reward_info ? { rewardInfo: result.reward_info } : {}),
    success: result.success,
    failed: false,
    episode: {
      messages: result.messages,
      trajectory: TokenTrajectory.fromJSON(result.trajectory),
      finalText: '',
      toolCalls: [],
      finishReason: result.finish_reason,
      stats: result.stats,
    },
  };
}
