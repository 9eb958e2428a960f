// Launched engines: seconds until a replica is ready (the embedded engine launched as `vllm serve`, so
// the launcher's own overhead plus a tiny model load), LoRA weight syncs per second into 2 replicas
// (write + load + unload + reset + confirm on each), and the router's cost per request against a
// direct client (loopback engine double answering at once).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEngineDouble } from '../src/__fixtures__/engine-double.js';
import { launchStandinReplicas, tinyAdapterSync } from '../src/__fixtures__/standin-replicas.js';
import { createRouterEngine } from '../src/engines/router.js';
import { createVllmClient } from '../src/engines/vllm.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-bench-engines-'));

let start = performance.now();
const engines = await launchStandinReplicas(dir);
const readyS = (performance.now() - start) / 1000;
const sync = await tinyAdapterSync(engines, dir);
const syncs = 20;
start = performance.now();
for (let v = 1; v <= syncs; v++) await sync.sync(v, join(dir, 'checkpoints', `step-${v}`));
const syncS = (performance.now() - start) / 1000;
await engines.stop();

const double = await startEngineDouble({ script: () => ({ tokenIds: [1, 2, 3] }) });
const params = { maxTokens: 3, temperature: 1, topP: 1, topK: -1 };
const direct = createVllmClient({ baseUrl: double.url, model: 'policy' });
const routed = createRouterEngine([
  createVllmClient({ baseUrl: double.url, model: 'policy' }),
  createVllmClient({ baseUrl: double.url, model: 'policy' }),
]);
const rate = async (engine: typeof direct): Promise<number> => {
  const n = 2000;
  const t = performance.now();
  for (let i = 0; i < n / 50; i++) await Promise.all(Array.from({ length: 50 }, () => engine.generate([1], params)));
  return n / ((performance.now() - t) / 1000);
};
// Alternating rounds, best of each: the first rounds warm the JIT and the connection pool.
let [directRate, routedRate] = [0, 0];
for (let round = 0; round < 4; round++) {
  directRate = Math.max(directRate, await rate(direct));
  routedRate = Math.max(routedRate, await rate(routed));
}
await double.close();

console.log(
  `engines: ${readyS.toFixed(2)} s until 2 launched replicas were ready (embedded engine as vllm serve, tiny model)`,
);
console.log(
  `engines: ${(syncs / syncS).toFixed(1)} LoRA syncs/s into 2 replicas (${((syncS / syncs) * 1000).toFixed(0)} ms each: write, load, unload, reset, confirm)`,
);
console.log(
  `engines: router ${routedRate.toFixed(0)} requests/s vs direct ${directRate.toFixed(0)} requests/s (ratio ${(routedRate / directRate).toFixed(2)}, 50 in flight)`,
);
