import type { SampleFn } from './shared.js';
import { sglangSample } from './sglang.js';
import type { Generation, ProtocolRequest } from './types.js';
import { vllmSample } from './vllm.js';

/**
 * Sends `request` for `promptIds` as the client that described it would have: same endpoint, body,
 * checks, retries and timeout. A rollout worker uses it for the requests its run thread routed.
 */
export function sendProtocolRequest(
  request: ProtocolRequest,
  promptIds: readonly number[],
  signal: AbortSignal | undefined,
): Promise<Generation[]> {
  return SAMPLERS[request.kind](request)(request.model, promptIds, request.params, signal);
}

/** Each protocol's sampler for the target a request names. */
const SAMPLERS: Readonly<Record<ProtocolRequest['kind'], (request: ProtocolRequest) => SampleFn>> = {
  vllm: (request) => vllmSample(request.target),
  sglang: (request) => sglangSample(request.target, request.baseModel),
};
