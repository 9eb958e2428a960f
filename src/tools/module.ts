import { resolve } from 'node:path';
import type { Tool } from '@strands-agents/sdk';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import { loadUserModule } from '../util/load-module.js';
import type { EpisodeEnv, EpisodeTools, ToolDefinition } from './types.js';

const ModuleToolOptions = z.strictObject({
  module: z.string().min(1),
  export: z.string().min(1).optional(),
});

/**
 * Tool `module` (what `tools: [{module: ./my-tools.ts, export: lookupOrder}]` becomes): the Strands
 * tools a user's TypeScript or JavaScript file exports. The export may be a tool, an array of
 * tools, or a function `(env) => tool | tool[]` called once per episode (for tools with per-episode
 * state); without `export`, every exported tool and tool array is taken.
 * @throws InputError when the module cannot be loaded or the export is missing or holds no tools.
 */
export const moduleTools: ToolDefinition = {
  name: 'module',
  options: ModuleToolOptions,
  async create(options, ctx): Promise<EpisodeTools> {
    const { module, export: name } = parseComponentOptions(ModuleToolOptions, options, 'tools.options');
    const file = resolve(ctx.recipeDir, module);
    const exports = await loadUserModule(file);
    return toolsFromExports(exports, file, name);
  },
};

/**
 * The episode tools held by a module's exports (see {@link moduleTools}).
 * @throws InputError naming the module and the export when there are no tools to take.
 */
export function toolsFromExports(
  exports: Readonly<Record<string, unknown>>,
  file: string,
  name?: string,
): EpisodeTools {
  if (name !== undefined) {
    if (!(name in exports))
      throw new InputError(`${file}: no export '${name}'; it exports ${Object.keys(exports).join(', ') || 'nothing'}`);
    const value = exports[name];
    if (typeof value === 'function' && !isTool(value))
      return (env) => toolList((value as (env: EpisodeEnv) => unknown)(env), `${file}#${name}(env)`);
    const tools = toolList(value, `${file}#${name}`);
    return () => tools;
  }
  const tools = Object.values(exports).flatMap((value) =>
    isTool(value) ? [value] : Array.isArray(value) && value.length > 0 && value.every(isTool) ? value : [],
  );
  const unique = [...new Set(tools)];
  if (unique.length === 0)
    throw new InputError(`${file}: exports no Strands tools`, {
      hint: 'export tool({...}) from @strands-agents/sdk, or name the export with export:',
    });
  return () => unique;
}

function toolList(value: unknown, where: string): Tool[] {
  const list = Array.isArray(value) ? value : [value];
  const bad = list.findIndex((item) => !isTool(item));
  if (list.length === 0 || bad >= 0) {
    throw new InputError(
      `${where}: expected a Strands tool or an array of tools, got ${list.length === 0 ? 'an empty array' : describe(list[bad])}`,
      {
        hint: "build tools with tool({name, description, inputSchema, callback}) from '@strands-agents/sdk'",
      },
    );
  }
  return list as Tool[];
}

/** Duck-typed, because a module may carry its own copy of the SDK whose classes differ from atk's. */
function isTool(value: unknown): value is Tool {
  const t = value as Partial<Tool> | null;
  return (
    !!t &&
    (typeof t === 'object' || typeof t === 'function') &&
    typeof t.name === 'string' &&
    typeof t.toolSpec === 'object' &&
    typeof t.stream === 'function'
  );
}

function describe(value: unknown): string {
  return value === null
    ? 'null'
    : Array.isArray(value)
      ? 'an array'
      : typeof value === 'object'
        ? 'an object that is not a tool'
        : typeof value;
}
