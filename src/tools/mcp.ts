import { resolve } from 'node:path';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpClient } from '@strands-agents/sdk';
import { z } from 'zod';
import { ProviderError } from '../errors/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import type { EpisodeTools, ToolDefinition } from './types.js';

const McpToolOptions = z.union([
  z.strictObject({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
    prefix: z.string().min(1).optional(),
  }),
  z.strictObject({
    url: z.string().url(),
    headers: z.record(z.string(), z.string()).optional(),
    prefix: z.string().min(1).optional(),
  }),
]);
export type McpToolOptions = z.infer<typeof McpToolOptions>;

/** Lines of a stdio server's stderr kept for the error message when it fails to start. */
const STDERR_LINES = 20;

/**
 * Tool `mcp` (what `tools: [{mcp: {command, args}}]` or `{mcp: {url}}` becomes): every tool an MCP
 * server lists, through the Strands SDK's MCP client. The server is started (stdio) or connected
 * (HTTP) once when the run builds its tools, its tools are shared by all episodes, and it is
 * stopped through `ctx.onClose` when the run ends. The server's stderr is kept, not printed.
 * @throws ProviderError when the server cannot be started or does not list its tools (with its stderr).
 */
export const mcpTools: ToolDefinition = {
  name: 'mcp',
  options: McpToolOptions,
  async create(options, ctx): Promise<EpisodeTools> {
    const parsed = parseComponentOptions(McpToolOptions, options, 'tools.mcp');
    const stderr: string[] = [];
    const client = new McpClient({
      ...connection(parsed, ctx.recipeDir, stderr),
      ...(parsed.prefix ? { prefix: parsed.prefix } : {}),
    });
    const label = 'command' in parsed ? [parsed.command, ...parsed.args].join(' ') : parsed.url;
    try {
      await client.connect();
      const tools = await client.listTools();
      ctx.onClose?.(() => client.disconnect());
      return () => tools;
    } catch (error) {
      await client.disconnect().catch(() => undefined);
      const tail = stderr.join('').trim().split('\n').slice(-STDERR_LINES).join('\n');
      throw new ProviderError(
        `MCP server '${label}' did not start: ${error instanceof Error ? error.message : String(error)}${tail ? `\n${tail}` : ''}`,
        {
          hint: 'run the server command by hand to see why it fails',
          cause: error,
        },
      );
    }
  },
};

function connection(
  options: McpToolOptions,
  recipeDir: string,
  stderr: string[],
): ConstructorParameters<typeof McpClient>[0] {
  if ('url' in options) return { url: options.url, ...(options.headers ? { headers: options.headers } : {}) };
  const transport = new StdioClientTransport({
    command: options.command,
    args: options.args,
    env: { ...getDefaultEnvironment(), ...options.env },
    cwd: resolve(recipeDir, options.cwd ?? '.'),
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr.push(chunk.toString());
    if (stderr.length > STDERR_LINES * 4) stderr.splice(0, stderr.length - STDERR_LINES);
  });
  return { transport, disableMcpInstrumentation: true };
}
