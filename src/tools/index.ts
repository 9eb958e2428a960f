import { Registry } from '../util/registry.js';
import type { ToolDefinition } from './types.js';

export type * from './types.js';

/** Every tool a recipe can name. Built-ins register here with a lazy import; user modules register the same way. */
export const tools = new Registry<ToolDefinition>('tool');
