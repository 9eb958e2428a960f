import type { ToolConfig } from '../recipe/schema.js';

/** A recipe tool entry as the registry sees it: a registered name and its options. */
export interface ToolComponent {
  readonly name: string;
  readonly options: Readonly<Record<string, unknown>>;
  /** Key of the entry `options` were written under: `options`, `mcp`, or '' (the entry itself) for `module`. */
  readonly optionsKey: string;
}

/**
 * Maps every form of a recipe tool entry onto a registered tool, so user modules and MCP servers
 * go through the same registry as built-ins: `{module, export}` is tool `module`, `{mcp}` is tool `mcp`.
 */
export function toolComponent(tool: ToolConfig): ToolComponent {
  if (tool.module !== undefined)
    return {
      name: 'module',
      options: { module: tool.module, ...(tool.export ? { export: tool.export } : {}) },
      optionsKey: '',
    };
  if (tool.mcp !== undefined)
    return {
      name: 'mcp',
      options: { ...tool.mcp, ...(tool.prefix ? { prefix: tool.prefix } : {}) },
      optionsKey: 'mcp',
    };
  return { name: tool.name ?? '', options: tool.options, optionsKey: 'options' };
}
