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
  const sample =
    request.kind === 'sglang' ? sglangSample(request.target, request.baseModel) : vllmSample(request.target);
  return sample(request.model, promptIds, request.params, signal);
}
