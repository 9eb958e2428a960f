// A tiny MCP server over stdio for the `mcp` tool tests: `node mcp-server.mjs [greeting]`.
// Tools: add {a, b} -> the sum as text; shout {text} -> "<greeting> TEXT" (greeting from argv or $GREETING);
// broken {} -> an isError result. It writes a line to stderr on start, which atk must keep off the terminal.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const greeting = process.argv[2] ?? process.env.GREETING ?? 'hey';
const server = new McpServer({ name: 'atk-test', version: '1.0.0' });
server.registerTool(
  'add',
  { description: 'Add two numbers', inputSchema: { a: z.number(), b: z.number() } },
  async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }),
);
server.registerTool('shout', { description: 'Shout a text', inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: 'text', text: `${greeting} ${text.toUpperCase()}` }],
}));
server.registerTool('broken', { description: 'Always fails', inputSchema: {} }, async () => ({
  content: [{ type: 'text', text: 'it broke' }],
  isError: true,
}));
process.stderr.write(`atk-test MCP server pid ${process.pid} started\n`);
await server.connect(new StdioServerTransport());
