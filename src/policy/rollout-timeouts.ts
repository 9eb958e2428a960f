import type { ResolvedRecipe } from '../recipe/index.js';

/** What `rollout.request_timeout_s: auto` and `episode_timeout_s: auto` are on a GPU or a launched engine. */
export const BASE_REQUEST_TIMEOUT_S = 120;
export const BASE_EPISODE_TIMEOUT_S = 300;
/** Parameters up to which a CPU engine keeps the base timeouts (the shipped tiny models and a little more). */
const CPU_BASE_PARAMETERS = 10e6;

/** What the serving side says about itself (a RunningPolicy's facts): engine kind, device, model size. */
export interface ServingFacts {
  readonly engine?: unknown;
  readonly device?: unknown;
  readonly parameters?: unknown;
}

/**
 * The engine-request and episode limits in ms. A number in the recipe is used as written; `auto` is 120 s and
 * 300 s, multiplied on the embedded engine on a CPU by the model's parameters over 10M: its decode and
 * prefill cost grows with the model while a GPU's or a launched server's barely does at these sizes, and a
 * 135M-parameter model's episodes took several minutes at 16 in flight on 2 cores, past the fixed 120 s.
 */
export function rolloutTimeoutsMs(
  rollout: Pick<ResolvedRecipe['rollout'], 'request_timeout_s' | 'episode_timeout_s'>,
  serving: ServingFacts = {},
): { readonly request: number; readonly episode: number; readonly scale: number } {
  const scale = cpuSlowdown(serving);
  const limit = (value: number | 'auto', base: number): number =>
    Math.round((value === 'auto' ? base * scale : value) * 1000);
  return {
    request: limit(rollout.request_timeout_s, BASE_REQUEST_TIMEOUT_S),
    episode: limit(rollout.episode_timeout_s, BASE_EPISODE_TIMEOUT_S),
    scale,
  };
}

function cpuSlowdown(serving: ServingFacts): number {
  const onCpu = serving.engine === 'embedded' && typeof serving.device === 'string' && serving.device.startsWith('cpu');
  if (!onCpu || typeof serving.parameters !== 'number') return 1;
  return Math.max(1, serving.parameters / CPU_BASE_PARAMETERS);
}
