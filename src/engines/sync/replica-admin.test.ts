import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ProviderError } from '../../errors/index.js';
import { replicaAdmin } from './replica-admin.js';

// A vLLM replica's /collective_rpc as vLLM answers it: one result per worker. The stand-in engines have
// one worker; a tensor-parallel vLLM has several, and each must report the reloaded version.
let results: unknown[] = [];
const requests: Array<{ path: string | undefined; body: unknown }> = [];
let server: Server;
let url = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      requests.push({ path: req.url, body: JSON.parse(raw || 'null') });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('replicaAdmin (vllm) full-weight reload', () => {
  test('returns from confirmWeights only when every worker reports the version', async () => {
    const admin = replicaAdmin('vllm', url, 5_000);
    await admin.reloadWeights('/ckpt/sync/step-00003', 'policy@3');
    // The reload, then the prefix cache the old weights computed goes (vLLM's extension cannot drop it).
    expect(requests.slice(-2)).toStrictEqual([
      {
        path: '/collective_rpc',
        body: { method: 'atk_reload_weights', args: ['/ckpt/sync/step-00003', 'policy@3'], timeout: 5 },
      },
      { path: '/reset_prefix_cache', body: null },
    ]);
    results = ['policy@3', 'policy@3'];
    await expect(admin.confirmWeights('policy@3')).resolves.toBeUndefined();
    for (const [reported, shown] of [
      [['policy@3', null], '[policy@3, null]'],
      [[], '[]'],
    ] as const) {
      results = [...reported];
      const error = await admin.confirmWeights('policy@3').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderError);
      expect((error as Error).message).toBe(
        `vllm at ${url} does not serve policy@3 after the weight sync (its workers report ${shown})`,
      );
    }
  });
});
