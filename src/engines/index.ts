import { createSglangClient } from './sglang.js';
import type { Engine, EngineClientOptions } from './types.js';
import { createVllmClient } from './vllm.js';

export type * from './types.js';
export { createVllmClient } from './vllm.js';
export { createSglangClient } from './sglang.js';
export { createRouterEngine, type RoutedEngine } from './router.js';
export { createSglangScorer, createVllmScorer, tokenScorers, type TokenScorer } from './scoring.js';

/** Protocol clients by the name `model.engine.protocol` (and engine kinds) use. */
export const engineProtocols: Readonly<Record<'vllm' | 'sglang', (options: EngineClientOptions) => Engine>> = {
  vllm: createVllmClient,
  sglang: createSglangClient,
};
