import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, test } from 'vitest';
import { ClusterSchema } from '../recipe/cluster-schema.js';
import type { GuardablePolicy } from '../policy/index.js';
import { guardPlacedPolicy, type WatchedPlacement } from './placed-guard.js';

describe('guardPlacedPolicy', () => {
  test("rejects its lost promise after the recipe's cluster.heartbeat_misses unanswered heartbeats, cluster.heartbeat_interval_s apart", async () => {
    // A trainer that answered once, then holds every request open (a hung node).
    let answered = 0;
    const server = createServer((_req, res) => {
      if (answered++ === 0) res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const cluster: WatchedPlacement = {
      allocation: { launcher: 'hosts', nodes: ['h1'], gpusPerNode: undefined, source: 'cluster.hosts' },
      placement: { trainerNodes: ['h1'], engineReplicas: [] },
      watch: () => undefined,
      failure: () => undefined,
      where: (node) => `host ${node}`,
    };
    const recipe = ClusterSchema.parse({ launcher: 'hosts', heartbeat_interval_s: 0.2, heartbeat_misses: 2 });
    const policy: GuardablePolicy = { trainer: {}, sync: {}, facts: {}, close: async () => undefined };
    const guarded = guardPlacedPolicy(
      policy,
      cluster,
      { baseUrl, logFile: 'trainer.log', exited: new Promise(() => undefined) },
      [],
      recipe,
    );
    try {
      await expect(guarded.lost).rejects.toThrow(
        'trainer on host h1 answered none of 2 heartbeats (GET /control/health, 0.2 s apart) during the run',
      );
    } finally {
      await guarded.close();
      server.closeAllConnections();
      server.close();
    }
  }, 30_000);
});
