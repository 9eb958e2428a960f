import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** A running MCP server over Streamable HTTP. */
export interface McpHttpServer {
  /** Where a client connects (`tools: [{mcp: {url}}]`). */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts a stateless MCP server over Streamable HTTP on 127.0.0.1 (a fresh McpServer with the tools
 * `register` adds answers each request), for the `{mcp: {url}}` tool tests. State that must outlive
 * one request (call counts) belongs in the caller's closure.
 */
export async function startMcpHttpServer(register: (server: McpServer) => void): Promise<McpHttpServer> {
  const http = createServer(async (req, res) => {
    const mcp = new McpServer({ name: 'atk-http-test', version: '1.0.0' });
    register(mcp);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
