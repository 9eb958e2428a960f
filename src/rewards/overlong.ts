import type { OverlongConfig } from '../recipe/objective-schemas.js';

/**
 * DAPO's soft overlong punishment (Yu et al. 2025, arXiv 2503.14476, eq. 13) for an episode that generated
 * `generated` tokens, with L_max = max_tokens and L_cache = buffer: 0 up to L_max - L_cache, then falling
 * linearly to -1 at L_max, and -1 past it. Added to the episode's reward.
 */
export function overlongPenalty(config: OverlongConfig, generated: number): number {
  const free = config.max_tokens - config.buffer;
  if (generated <= free) return 0;
  if (generated <= config.max_tokens) return (free - generated) / config.buffer;
  return -1;
}
