/**
 * `atk eval`: start the policy the recipe names (optionally from a checkpoint), build the same episode
 * kit as training, and evaluate a split, yielding the events the dashboard shows.
 */
import { datasetContext } from '../datasets/context.js';
import { datasets } from '../datasets/index.js';
import { EventChannel } from '../util/event-channel.js';
import { reportStalls, StallWatch } from '../rollout/stall-watch.js';
import { watchedKit } from '../rollout/watched-kit.js';
import { evaluate } from './evaluate.js';
import { openSession, type Session, type SessionOptions } from './session.js';
import type { EvalSummary, RunEvent } from './events.js';

/** The session to open (the run or eval directory as `runDir`) and what to evaluate with it. */
export interface EvalRunOptions extends SessionOptions {
  /** Where results.jsonl and summary.json go (`<dir>/eval/<label>`). */
  readonly outDir: string;
  readonly label: string;
  /** Checkpoint to load, with the steps it was taken after; undefined = the recipe's model as it is. */
  readonly checkpoint?: { readonly dir: string; readonly step: number };
  readonly split: string;
  readonly limit?: number;
  readonly samples: number;
  readonly concurrency: number;
  readonly temperature: number;
  readonly resume: boolean;
}

/** Evaluate; yields phases, per-episode progress and the summary; stops the policy whatever happens. */
export async function* evalRun(options: EvalRunOptions): AsyncGenerator<RunEvent, EvalSummary> {
  const { recipe, signal } = options;
  let session: Session | undefined;
  try {
    yield { type: 'phase', message: `loading ${recipe.dataset.name} ${options.split}` };
    const dataset = await datasets.get(recipe.dataset.name);
    const all = await dataset.load(options.split, datasetContext(recipe, options.recipeDir));
    // The recipe's eval_limit holds on its eval split, so a checkpoint scores on the tasks its run's evals used.
    const limit =
      options.limit ?? (options.split === recipe.dataset.eval_split ? recipe.dataset.eval_limit : undefined);
    const tasks = limit ? all.slice(0, limit) : all;
    // The base model loads nothing into the engine: a running server needs no weight-reload extension for it.
    session = yield* openSession({ ...options, loadsWeights: options.checkpoint !== undefined });
    const { policy, kit } = session;
    let policyVersion = 0;
    if (options.checkpoint) {
      yield { type: 'phase', message: `loading checkpoint ${options.checkpoint.dir}` };
      policyVersion = await policy.trainer.load(options.checkpoint.dir);
    }
    yield { type: 'evalStarted', label: options.label, tasks: tasks.length };
    const step = options.checkpoint?.step ?? 0;
    const channel = new EventChannel<RunEvent>();
    // A stalled evaluation names what it waits on, as a stalled training step does.
    const watch = new StallWatch();
    watch.evalStarted(options.label, tasks.length * options.samples);
    const stopWatching = reportStalls(watch, (message) => channel.push({ type: 'warning', message }));
    const summary = yield* channel.drainUntil(
      evaluate(watchedKit(kit, watch), tasks, {
        label: options.label,
        split: options.split,
        step,
        policyVersion,
        samples: options.samples,
        temperature: options.temperature,
        topP: options.temperature === 0 ? 1 : recipe.rollout.top_p,
        topK: options.temperature === 0 ? -1 : recipe.rollout.top_k,
        concurrency: options.concurrency,
        seed: recipe.seed,
        outDir: options.outDir,
        resume: options.resume,
        signal,
        lost: policy.lost,
        onEpisode: (done, total, rollout) => {
          watch.evalEpisodeFinished(rollout.episode.stats.wallMs);
          channel.push({ type: 'episodeFinished', step, done, total, reward: rollout.reward, failed: rollout.failed });
        },
      }).finally(stopWatching),
    );
    yield { type: 'evalFinished', label: options.label, step, summary };
    return summary;
  } finally {
    await session?.close();
  }
}
