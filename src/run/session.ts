/**
 * What `atk run` and `atk eval` both start from a recipe: the tokenizer, the policy (trainer and
 * engine), and the episode kit (tools, reward, prompts). One place, so the two cannot drift apart.
 */
import { datasets } from '../datasets/index.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import { loadModelTokenizer, type ModelTokenizer, type TokenizerOverrides } from '../tokens/index.js';
import { EventChannel } from '../util/event-channel.js';
import { type EpisodeKit, workerEpisodes } from '../rollout/collect.js';
import { startClusterLaunch } from '../cluster/cluster-launch.js';
import { startRolloutWorkers } from './rollout-workers.js';
import type { RunEvent } from './events.js';
import { rolloutTimeoutsMs } from '../policy/rollout-timeouts.js';
import { buildEpisodeKit } from './kit.js';
import { tokenizerOverrides } from './recipe-tokenizer.js';
import { engineKind, engineProgressLines, type RunningPolicy } from '../policy/index.js';
import { startContextModel } from '../policy/context-model.js';
import { SYNC_FAULT_ENV, syncFault } from '../engines/sync/index.js';

export interface SessionOptions {
  readonly recipe: ResolvedRecipe;
  readonly recipeDir: string;
  readonly recipeFile: string;
  /** Directory the trainer and tools may write under (a run or eval directory). */
  readonly runDir: string;
  readonly logsDir: string;
  readonly signal: AbortSignal;
  /** False when no weights will be loaded into the engine (see StartPolicyOptions.loadsWeights). */
  readonly loadsWeights?: boolean;
}

/** A started policy with everything episodes need; `close()` stops what the session started. */
export interface Session {
  readonly tokenizer: ModelTokenizer;
  readonly policy: RunningPolicy;
  readonly kit: EpisodeKit;
  close(): Promise<void>;
}

/**
 * Start a session, yielding progress (phases, engine start-up lines, warnings) as events.
 * Whatever started is stopped again when a later part fails.
 * @throws ConfigError, TrainerError or ProviderError from the part that failed.
 */
export async function* openSession(options: SessionOptions): AsyncGenerator<RunEvent, Session> {
  const { recipe, signal } = options;
  const warnings: string[] = [];
  // The run's kit and each worker's give the same warnings; each is shown once.
  const warn = (message: string): void => void (warnings.includes(message) || warnings.push(message));
  const dataset = await datasets.get(recipe.dataset.name);
  const kind = engineKind(recipe);
  const modelDir = kind.modelDir(recipe, options.recipeDir);
  const overrides = tokenizerOverrides(recipe);
  const tokenizer = await loadModelTokenizer(modelDir, overrides);
  const fault = syncFault();
  if (fault)
    yield {
      type: 'warning',
      message: `${SYNC_FAULT_ENV}=${fault}: every weight sync is broken on purpose (a test of the check after each sync)`,
    };
  yield { type: 'phase', message: `starting the trainer and the ${recipe.model.engine.kind} engine` };
  const starting = new EventChannel<RunEvent>();
  const onEngineProgress = engineProgressLines(recipe.model.engine.kind, (message) =>
    starting.push({ type: 'phase', message }),
  );
  const policy = yield* starting.drainUntil(
    kind.start({
      recipe,
      recipeDir: options.recipeDir,
      logsDir: options.logsDir,
      runDir: options.runDir,
      signal,
      onEngineProgress,
      place: (placed) => startClusterLaunch(placed),
      ...(options.loadsWeights === false ? { loadsWeights: false } : {}),
    }),
  );
  let kit: EpisodeKit;
  try {
    kit = await buildEpisodeKit({
      recipe,
      recipeDir: options.recipeDir,
      recipeFile: options.recipeFile,
      runDir: options.runDir,
      dataset,
      engine: policy.engine,
      serving: policy.facts,
      tokenizer,
      startContextModel: () =>
        startContextModel({
          recipe,
          recipeDir: options.recipeDir,
          logsDir: options.logsDir,
          runDir: options.runDir,
          signal,
        }),
      warn,
    });
  } catch (error) {
    await policy.close();
    throw error;
  }
  const timeouts = rolloutTimeoutsMs(recipe.rollout, policy.facts);
  if (
    timeouts.scale > 1 &&
    (recipe.rollout.request_timeout_s === 'auto' || recipe.rollout.episode_timeout_s === 'auto')
  )
    yield {
      type: 'phase',
      message: `rollout timeouts (auto) for a ${Math.round(Number(policy.facts.parameters) / 1e6)}M-parameter model on the embedded engine on a CPU: ${Math.round(timeouts.request / 1000)} s per engine request, ${Math.round(timeouts.episode / 1000)} s per episode`,
    };
  if (recipe.rollout.workers > 0) {
    yield { type: 'phase', message: `starting ${recipe.rollout.workers} rollout worker(s)` };
    try {
      kit = await withRolloutWorkers(kit, options, modelDir, overrides, warn);
    } catch (error) {
      await kit.close?.();
      await policy.close();
      throw error;
    }
  }
  for (const message of warnings) yield { type: 'warning', message };
  const built = kit;
  return {
    tokenizer,
    policy,
    kit,
    close: async () => {
      await built.close?.();
      await policy.close();
    },
  };
}

/**
 * `kit` with `rollout.workers` threads that run its episodes, each building a kit of its own from the
 * recipe; closing it ends the workers before the run's own kit.
 */
async function withRolloutWorkers(
  kit: EpisodeKit,
  options: SessionOptions,
  modelDir: string,
  tokenizer: TokenizerOverrides,
  warn: (message: string) => void,
): Promise<EpisodeKit> {
  const workers = await startRolloutWorkers({
    count: options.recipe.rollout.workers,
    setup: {
      recipe: options.recipe,
      recipeDir: options.recipeDir,
      recipeFile: options.recipeFile,
      runDir: options.runDir,
      modelDir,
      tokenizer,
    },
    engine: kit.engine,
    warn,
  });
  return {
    ...kit,
    runner: workerEpisodes(workers),
    close: async () => {
      await workers.close();
      await kit.close?.();
    },
  };
}
