import { Registry } from '../util/registry.js';
import type { RewardDefinition } from './types.js';

export type * from './types.js';

/** Every reward a recipe can name. Built-ins register here with a lazy import; user modules register the same way. */
export const rewards = new Registry<RewardDefinition>('reward');
