import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startMcpHttpServer, type McpHttpServer } from '../__fixtures__/mcp-http-server.js';
import { runStrandsTool } from '../domains/tau2/tools/common.js';
import { ProviderError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { mcpTools } from './mcp.js';
import type { EpisodeEnv } from './types.js';

const server = join(projectRoot(), 'src', '__fixtures__', 'mcp-server.mjs');
const env = {
  episodeId: 'e',
  task: { id: 't', prompt: '', data: {} },
  state: new Map(),
  signal: new AbortController().signal,
} as EpisodeEnv;

/** Runs `create` with an onClose list, and returns the tools plus a close function. */
async function start(options: Record<string, unknown>) {
  const closers: (() => Promise<void>)[] = [];
  const make = await mcpTools.create(options, {
    recipeDir: projectRoot(),
    warn: () => undefined,
    onClose: (fn) => void closers.push(fn),
  });
  return { tools: make(env), close: () => Promise.all(closers.map((fn) => fn())), closers };
}

function serverPids(): string[] {
  try {
    return execFileSync('pgrep', ['-f', server], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('mcpTools', () => {
  it('returns the tools of a stdio MCP server, which run, and stops the server on close', async () => {
    const before = serverPids();
    const run = await start({ command: process.execPath, args: [server, 'yo'], env: { UNUSED: '1' } });
    expect(run.tools.map((t) => t.name)).toStrictEqual(['add', 'shout', 'broken']);
    const [add, shout, broken] = run.tools;
    expect(await runStrandsTool(add!, { a: 2, b: 40 })).toStrictEqual({ status: 'success', output: '42' });
    expect(await runStrandsTool(shout!, { text: 'hi' })).toStrictEqual({ status: 'success', output: 'yo HI' });
    expect(await runStrandsTool(broken!, {})).toStrictEqual({ status: 'error', output: 'it broke' });
    expect(serverPids().length).toBe(before.length + 1);
    await run.close();
    expect(serverPids()).toStrictEqual(before);
  });

  it('returns prefixed tool names and passes env to the server', async () => {
    const run = await start({ command: process.execPath, args: [server], env: { GREETING: 'ahoy' }, prefix: 'srv' });
    try {
      expect(run.tools.map((t) => t.name)).toStrictEqual(['srv_add', 'srv_shout', 'srv_broken']);
      expect(await runStrandsTool(run.tools[1]!, { text: 'x' })).toStrictEqual({ status: 'success', output: 'ahoy X' });
    } finally {
      await run.close();
    }
  });

  it('rejects a server that does not start, quoting its stderr', async () => {
    const error = await start({
      command: process.execPath,
      args: ['-e', "process.stderr.write('missing API token\\n'); process.exit(3)"],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as Error).message).toMatch(/^MCP server '.*node.* -e .*' did not start: .*\nmissing API token$/s);
  });

  describe('over HTTP', () => {
    let http: McpHttpServer | undefined;
    afterAll(() => http?.close());

    it('returns the tools of an MCP server at a URL', async () => {
      http = await startMcpHttpServer((mcp) => {
        mcp.registerTool('triple', { description: 'Triple', inputSchema: { x: z.number() } }, async ({ x }) => ({
          content: [{ type: 'text', text: String(3 * x) }],
        }));
      });
      const run = await start({ url: http.url });
      try {
        expect(run.tools.map((t) => t.name)).toStrictEqual(['triple']);
        expect(await runStrandsTool(run.tools[0]!, { x: 5 })).toStrictEqual({ status: 'success', output: '15' });
      } finally {
        await run.close();
      }
    });
  });
});
