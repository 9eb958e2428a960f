// The smoke quickstart on the shipped tiny-arith model, written as a recipe of its own, and the stand-in for a
// vLLM server someone else runs: what the end-to-end tests of weight syncs and engine failures start from.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchEngines, type LaunchedEngines } from '../engines/launch/index.js';
import { EngineSchema } from '../recipe/model-schema.js';
import { projectRoot } from '../util/paths.js';
import { embeddedVllmCommand } from './engine-processes.js';

/** The shipped tiny-arith model (GRPO has a learning signal on it; vLLM's CPU attention serves it). */
export const TINY_ARITH = join(projectRoot(), 'models', 'tiny-arith');

/**
 * Writes `<dir>/<name>.yaml`: recipes/smoke/quickstart.yaml as `name` on tiny-arith on the CPU, served by
 * `engine` (a `  engine: {...}` line of model; none: the embedded engine), trained by `algorithm`, with
 * `lines` added. Returns its path.
 */
export function writeSmokeRecipe(
  dir: string,
  name: string,
  options: { readonly engine?: string; readonly algorithm: string; readonly lines?: readonly string[] },
): string {
  const recipe = join(dir, `${name}.yaml`);
  writeFileSync(
    recipe,
    [
      `name: ${name}`,
      `extends: ${join(projectRoot(), 'recipes', 'smoke', 'quickstart.yaml')}`,
      'model:',
      `  path: ${TINY_ARITH}`,
      ...(options.engine ? [options.engine] : []),
      '  trainer: {device: cpu}',
      `algorithm: ${options.algorithm}`,
      ...(options.lines ?? []),
    ].join('\n'),
  );
  return recipe;
}

/** The embedded engine behind `vllm serve`'s command line, started as a server a recipe reaches by url (logs in `logsDir`). */
export function startUrlStandIn(logsDir: string, args: readonly string[] = []): Promise<LaunchedEngines> {
  return launchEngines({
    kind: 'vllm',
    config: EngineSchema.parse({ kind: 'vllm', command: embeddedVllmCommand, args }),
    model: TINY_ARITH,
    logsDir,
    requestTimeoutMs: 60_000,
  });
}
