/**
 * The simulated user's own engine (`user.kind: engine`): a second server beside the policy's, attached
 * by URL or launched by atk, serving a model that is never trained.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { engineProtocols, type Engine } from '../engines/index.js';
import { launchEngines } from '../engines/launch/index.js';
import { engineUrls } from '../engines/url-engines.js';
import { InputError } from '../errors/index.js';
import type { EngineConfig, UserSimulatorConfig } from '../recipe/schema.js';
import type { UserEngine, UserSimulationContext } from '../rollout/user-simulation.js';
import { loadModelTokenizer } from '../tokens/index.js';
import { localModelDir } from '../util/hub-cache.js';
import type { EngineProtocol } from './engine-kind.js';
import { engineKindOf } from './index.js';

/**
 * Starts the engine of a `kind: engine` user: attached by URL, or vLLM/SGLang launched beside the policy's.
 * @throws InputError without `user.model`/`user.engine`, or for an engine kind that cannot serve a second
 * model (the embedded one); EngineStartError when a launched user engine does not start.
 */
export async function startUserEngine(
  config: UserSimulatorConfig,
  ctx: Pick<UserSimulationContext, 'recipeDir' | 'runDir' | 'seed' | 'requestTimeoutMs'>,
): Promise<UserEngine> {
  const engineConfig = config.engine;
  if (config.model === undefined || engineConfig === undefined) {
    throw new InputError('user.kind engine needs user.model and user.engine', {
      hint: 'e.g. user: {kind: engine, model: Qwen/Qwen3-8B, engine: {kind: vllm, gpus: [2]}}',
    });
  }
  // read before anything launches: a model without a tokenizer fails in a second, not after the engine loaded
  const tokenizer = await loadModelTokenizer(servingModelDir(config.model, ctx.recipeDir));
  const served = await startServingEngine(config.model, engineConfig, {
    ...ctx,
    servedModelName: 'user',
    what: 'user.engine.kind',
    logsName: 'user',
  });
  return { engine: served.engine, tokenizer, stop: served.stop };
}

/** A second engine serving a model that is never trained: where its model lives, the engine, and how to stop it. */
export interface ServingEngine {
  readonly engine: Engine;
  readonly protocol: EngineProtocol;
  /** The local model directory (relative to the recipe, else the hub cache's copy). */
  readonly modelDir: string;
  stop(): Promise<void>;
}

/**
 * Starts a second, never-trained engine for `model` (the simulated user's, a distillation teacher's):
 * attached by URL, or vLLM/SGLang launched beside the policy's, its logs under logs/<logsName>.
 * @throws InputError for an engine kind that cannot serve a second model (the embedded one: `what` names
 * the key); EngineStartError when a launched engine does not start.
 */
export async function startServingEngine(
  model: string,
  engineConfig: EngineConfig,
  ctx: Pick<UserSimulationContext, 'recipeDir' | 'runDir' | 'seed' | 'requestTimeoutMs'> & {
    readonly servedModelName: string;
    readonly what: string;
    readonly logsName: string;
  },
): Promise<ServingEngine> {
  const kind = engineKindOf(engineConfig);
  const protocol = kind.syncProtocol(engineConfig);
  if (protocol === undefined) {
    throw new InputError(`${ctx.what} ${kind.name} is not supported: one trainer serves the policy`, {
      hint: 'use user.kind: policy to let the policy play the user, or a vllm, sglang or url engine',
    });
  }
  const modelDir = servingModelDir(model, ctx.recipeDir);
  if (!kind.launched) {
    const engine = engineProtocols[protocol]({
      baseUrl: engineUrls(engineConfig)[0] ?? '',
      model,
      timeoutMs: ctx.requestTimeoutMs,
    });
    return { engine, protocol, modelDir, stop: () => Promise.resolve() };
  }
  const launched = await launchEngines({
    kind: protocol,
    config: engineConfig,
    model: modelDir,
    servedModelName: ctx.servedModelName,
    seed: ctx.seed,
    logsDir: join(ctx.runDir ?? ctx.recipeDir, 'logs', ctx.logsName),
    requestTimeoutMs: ctx.requestTimeoutMs,
    ...(ctx.runDir ? { cwd: ctx.runDir } : {}),
  });
  return { engine: launched.engine, protocol, modelDir, stop: () => launched.stop() };
}

/** A served model's local directory: relative to the recipe when it holds a config.json, else the hub cache's copy. */
export function servingModelDir(model: string, recipeDir: string): string {
  const local = resolve(recipeDir, model);
  return existsSync(join(local, 'config.json')) ? local : localModelDir(model);
}
