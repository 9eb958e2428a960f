import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Task } from '../datasets/types.js';
import { collectRollout, type EpisodeKit, type Rollout } from './collect.js';
import { meanPassAtK, reportedKs } from './eval-metrics.js';
import type { EvalSummary } from './events.js';
import { runGroups } from './scheduler.js';
import { rolloutFigures, trajectoryRecord } from './step-record.js';
import { episodeSeed } from './task-stream.js';

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
}

/**
 * Score the policy on a set of tasks with the same agent loop, tools and reward as training.
 * Writes one results.jsonl line per episode (with its trajectory) and summary.json.
 */
export async function evaluate(kit: EpisodeKit, tasks: readonly Task[], options: EvalOptions): Promise<EvalSummary> {
  const groups = await runGroups(tasks, options.samples, options.concurrency, ({ task, group, sample }) =>
    collectRollout(kit, {
      task,
      group,
      sample,
      seed: episodeSeed(options.seed, -1 - options.step, group, sample),
      temperature: options.temperature,
      topP: options.topP,
      topK: options.topK,
      policyVersion: options.policyVersion,
      ...(options.signal ? { signal: options.signal } : {}),
    }),
  );
  const summary = summarize(groups, options);
  if (options.outDir) await writeResults(options.outDir, groups, summary, options.step);
  return summary;
}

/** The eval figures of a set of groups (one group = the samples of one task). */
export function summarize(groups: readonly (readonly Rollout[])[], options: Pick<EvalOptions, 'label' | 'split' | 'samples'>): EvalSummary {
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
  };
}

async function writeResults(outDir: string, groups: readonly (readonly Rollout[])[], summary: EvalSummary, step: number): Promise<void> {
  await mkdir(outDir, { recursive: true });
  const lines = groups.flat().map((r) => JSON.stringify(trajectoryRecord(r, step, null)));
  await atomicWrite(join(outDir, 'results.jsonl'), lines.length ? `${lines.join('\n')}\n` : '');
  await atomicWrite(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
}

async function atomicWrite(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}
