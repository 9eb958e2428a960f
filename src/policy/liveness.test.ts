import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { ProviderError } from '../errors/index.js';
import { watchLiveness } from './liveness.js';

// A real HTTP listener playing an engine's /health: it answers until `hang` is set, then holds every
// request open without an answer (a stopped process or a hung node: nothing exits, nothing refuses).
let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
});

async function healthServer(): Promise<{ url: string; hang: () => void }> {
  let hanging = false;
  server = createServer((_req, res) => {
    if (!hanging) res.end('ok');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hang: () => void (hanging = true) };
}

const settled = (p: Promise<unknown>, ms: number): Promise<unknown> =>
  Promise.race([p.catch((e: unknown) => e), new Promise((resolve) => setTimeout(() => resolve('pending'), ms))]);

describe('watchLiveness', () => {
  test('rejects, naming the component and its node, once a replica left enough heartbeats unanswered', async () => {
    const { url, hang } = await healthServer();
    const liveness = watchLiveness({
      failure: () => undefined,
      heartbeats: [{ component: 'engine replica 0', where: 'node n2 (slurm job 7)', url, path: '/health' }],
      intervalS: 0.2,
      misses: 2,
      hint: 'the node hangs',
    });
    expect(await settled(liveness.lost, 1000)).toBe('pending'); // answering: alive
    const hungAt = performance.now();
    hang();
    const error = await settled(liveness.lost, 20_000);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as Error).message).toBe(
      'engine replica 0 on node n2 (slurm job 7) answered none of 2 heartbeats (GET /health, 0.2 s apart) during the run',
    );
    // Bounded: two probes, each given at most 5 s.
    expect(performance.now() - hungAt).toBeLessThan(12_000);
  }, 30_000);

  test('rejects with the ended process named within about a second, and stays pending once stopped', async () => {
    const { url } = await healthServer();
    let ended: ProviderError | undefined;
    const heartbeats = [{ component: 'trainer', where: 'host h1', url, path: '/health' }];
    const liveness = watchLiveness({ failure: () => ended, heartbeats, intervalS: 60, hint: '' });
    ended = new ProviderError('engine replica 1 on host h3 was killed during the run (log: logs/engine-1.log)');
    expect(await settled(liveness.lost, 2500)).toBe(ended);

    const stopped = watchLiveness({ failure: () => ended, heartbeats, intervalS: 60, hint: '' });
    stopped.stop();
    expect(await settled(stopped.lost, 1500)).toBe('pending');
  });
});
