import type { Engine } from './types.js';

/** An Engine over several replicas of one model; `replicas` are the per-replica clients. */
export interface RoutedEngine extends Engine {
  readonly replicas: readonly Engine[];
  /** Samples in flight per replica (a generateN request counts its n). */
  inFlight(): number[];
}

/**
 * Routes each request to the replica with the fewest samples in flight, so a slow replica (long
 * episodes, a busier GPU) gets less work. Ties rotate, so sequential requests spread out too.
 * `kind` and `baseUrl` are the first replica's; `setModel` renames on every replica (after a weight sync
 * has reached them all); `health` is true only when every replica is healthy; `models` lists the names
 * every replica serves.
 */
export function createRouterEngine(replicas: readonly Engine[]): RoutedEngine {
  if (replicas.length === 0) throw new Error('createRouterEngine: no replicas');
  const load = replicas.map(() => 0);
  let next = 0;

  function pick(): number {
    let best = -1;
    for (let k = 0; k < replicas.length; k++) {
      const i = (next + k) % replicas.length;
      if (best < 0 || load[i] < load[best]) best = i;
    }
    next = (best + 1) % replicas.length;
    return best;
  }

  async function routed<T>(weight: number, call: (engine: Engine) => Promise<T>): Promise<T> {
    const i = pick();
    load[i] += weight;
    try {
      return await call(replicas[i]);
    } finally {
      load[i] -= weight;
    }
  }

  return {
    replicas,
    kind: replicas[0].kind,
    baseUrl: replicas[0].baseUrl,
    get model() {
      return replicas[0].model;
    },
    inFlight: () => [...load],
    generate: (promptIds, params, signal) => routed(1, (e) => e.generate(promptIds, params, signal)),
    generateN: (promptIds, params, signal) => routed(params.n ?? 1, (e) => e.generateN(promptIds, params, signal)),
    async health() {
      return (await Promise.all(replicas.map((e) => e.health()))).every(Boolean);
    },
    async models() {
      const lists = await Promise.all(replicas.map((e) => e.models()));
      return lists[0].filter((name) => lists.every((list) => list.includes(name)));
    },
    setModel(name) {
      for (const e of replicas) e.setModel(name);
    },
  };
}
