/**
 * `model.engine.kind: url` with one URL or a list: engines someone else started (on any host), routed
 * by fewest samples in flight like launched replicas, and every one of them synced after each step.
 */
import type { EngineConfig } from '../recipe/schema.js';
import { engineProtocols } from './index.js';
import { createRouterEngine, type RoutedEngine } from './router.js';

/** The recipe's engine URLs as a list (empty when none is given). */
export function engineUrls(config: Pick<EngineConfig, 'url'>): string[] {
  if (config.url === undefined) return [];
  return typeof config.url === 'string' ? [config.url] : [...config.url];
}

/** A router over a client of each URL, speaking `protocol`. */
export function urlEngines(urls: readonly string[], protocol: 'vllm' | 'sglang', timeoutMs: number): RoutedEngine {
  return createRouterEngine(urls.map((baseUrl) => engineProtocols[protocol]({ baseUrl, model: 'policy', timeoutMs })));
}
