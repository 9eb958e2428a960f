import { Registry } from '../util/registry.js';
import type { DatasetDefinition } from './types.js';

export type * from './types.js';

/** Every dataset a recipe can name. Built-ins register here with a lazy import; user modules register the same way. */
export const datasets = new Registry<DatasetDefinition>('dataset');
