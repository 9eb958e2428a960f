/**
 * The simulated user's own engine (`user.kind: engine`): a second server beside the policy's, attached
 * by URL or launched by atk, serving a model that is never trained.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { engineProtocols } from '../engines/index.js';
import { launchEngines } from '../engines/launch/index.js';
import { engineUrls } from '../engines/url-engines.js';
import { InputError } from '../errors/index.js';
import type { UserSimulatorConfig } from '../recipe/schema.js';
import type { UserEngine, UserSimulationContext } from '../rollout/user-simulation.js';
import { loadModelTokenizer } from '../tokens/index.js';
import { localModelDir } from '../util/hub-cache.js';
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
  const kind = engineKindOf(engineConfig);
  const protocol = kind.syncProtocol(engineConfig);
  if (protocol === undefined) {
    throw new InputError(`user.engine.kind ${kind.name} is not supported: one trainer serves the policy`, {
      hint: 'use user.kind: policy to let the policy play the user, or a vllm, sglang or url engine',
    });
  }
  const local = resolve(ctx.recipeDir, config.model);
  const modelDir = existsSync(join(local, 'config.json')) ? local : localModelDir(config.model);
  const tokenizer = await loadModelTokenizer(modelDir);
  if (!kind.launched) {
    const engine = engineProtocols[protocol]({
      baseUrl: engineUrls(engineConfig)[0] ?? '',
      model: config.model,
      timeoutMs: ctx.requestTimeoutMs,
    });
    return { engine, tokenizer, stop: () => Promise.resolve() };
  }
  const launched = await launchEngines({
    kind: protocol,
    config: engineConfig,
    model: modelDir,
    servedModelName: 'user',
    seed: ctx.seed,
    logsDir: join(ctx.runDir ?? ctx.recipeDir, 'logs', 'user'),
    requestTimeoutMs: ctx.requestTimeoutMs,
    ...(ctx.runDir ? { cwd: ctx.runDir } : {}),
  });
  return { engine: launched.engine, tokenizer, stop: () => launched.stop() };
}
