// tau2: database load and per-episode copy cost (64 concurrent episodes of the 7 MB airline DB),
// memory per live episode, and perfect-agent episodes/s (real tools via Strands + the evaluator)
// with 64 episodes in flight, over every airline and retail task.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { registerBuiltins } from '../src/builtins.js';
import { perfectToolCalls } from '../src/__fixtures__/tau2-perfect.js';
import { baseDb, domainSpec, EpisodeDb, type Tau2Domain } from '../src/domains/tau2/index.js';
import { datasets } from '../src/datasets/index.js';
import type { Task } from '../src/datasets/types.js';
import { rewards } from '../src/rewards/index.js';
import { tools } from '../src/tools/index.js';
import type { EpisodeEnv } from '../src/tools/types.js';
import { dataDir } from '../src/util/paths.js';

registerBuiltins();

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const CONCURRENT = 64;
const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);
const heap = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};

// 1. Shared database: loaded and frozen once per process.
const airline = domainSpec('airline');
let before = heap();
let started = performance.now();
const base = await baseDb(airline, dataDir());
console.log(
  `airline db.json load + freeze: ${(performance.now() - started).toFixed(0)} ms, ${mb(heap() - before)} MB heap (shared by all episodes)`,
);

// 2. Per-episode copies: copy-on-write overlays vs a full structuredClone.
before = heap();
started = performance.now();
const copies = Array.from({ length: CONCURRENT }, () => new EpisodeDb(airline.model, base));
const overlayUs = ((performance.now() - started) * 1000) / CONCURRENT;
for (const [i, db] of copies.entries()) {
  // Each episode writes like a booking does: a user, a flight and a new reservation.
  const user = db.edit('users', 'mia_li_3668');
  (user.reservations as string[]).push(`NEW${i}`);
  db.edit('flights', 'HAT001');
  db.insert('reservations', `NEW${i}`, { reservation_id: `NEW${i}` });
}
const overlayBytes = (heap() - before) / CONCURRENT;
before = heap();
started = performance.now();
const clones = Array.from({ length: 4 }, () => structuredClone(base));
const cloneMs = (performance.now() - started) / clones.length;
const cloneBytes = (heap() - before) / clones.length;
console.log(
  `${CONCURRENT} concurrent airline episode DBs (copy-on-write): ${overlayUs.toFixed(2)} us per copy, ${(overlayBytes / 1024).toFixed(1)} KB per episode after 3 writes`,
);
console.log(
  `  for comparison a full structuredClone: ${cloneMs.toFixed(0)} ms and ${mb(cloneBytes)} MB heap per copy (x${CONCURRENT} = ${mb(cloneBytes * CONCURRENT)} MB)`,
);
copies.length = 0;
clones.length = 0;

// 3. Perfect-agent episodes through the registered dataset, tools and reward.
async function perfectEpisodes(
  domain: Tau2Domain,
): Promise<{ episodes: number; seconds: number; perfect: number; bytesPerEpisode: number }> {
  const tasks = await (await datasets.get('tau2')).load('all', {
    recipeDir: '.',
    dataDir: dataDir(),
    seed: 0,
    options: { domain },
  });
  const makeTools = await (await tools.get('tau2')).create({ domain }, { recipeDir: '.', warn: () => {} });
  const reward = await (await rewards.get('tau2')).create(
    { domain, basis: 'judge_free' },
    { recipeDir: '.', warn: () => {} },
  );
  const run = async (task: Task, i: number, live: EpisodeEnv[]): Promise<number> => {
    const env: EpisodeEnv = { episodeId: String(i), task, state: new Map(), signal: new AbortController().signal };
    live.push(env);
    const { toolCalls, communicateInfo } = await perfectToolCalls(task, makeTools(env));
    const messages = [
      { role: 'assistant', content: [{ text: task.data.greeting }] },
      { role: 'assistant', content: [{ text: communicateInfo.join(', ') || 'Done.' }] },
      { role: 'user', content: [{ text: '###STOP###' }] },
    ];
    const scored = await reward({ task, finalText: '', messages, toolCalls, finishReason: 'endTurn', env });
    return typeof scored === 'number' ? scored : scored.score;
  };
  const rounds = 4;
  const all = Array.from({ length: rounds }, () => tasks).flat();
  let perfect = 0;
  let peakBytes = 0;
  const startedAt = performance.now();
  for (let i = 0; i < all.length; i += CONCURRENT) {
    const live: EpisodeEnv[] = [];
    const baseline = process.memoryUsage().heapUsed;
    const scores = await Promise.all(all.slice(i, i + CONCURRENT).map((task, j) => run(task, i + j, live)));
    peakBytes = Math.max(peakBytes, (process.memoryUsage().heapUsed - baseline) / live.length);
    perfect += scores.filter((s) => s === 1).length;
  }
  return { episodes: all.length, seconds: (performance.now() - startedAt) / 1000, perfect, bytesPerEpisode: peakBytes };
}

for (const domain of ['airline', 'retail'] as const) {
  await perfectEpisodes(domain);
  const r = await perfectEpisodes(domain);
  console.log(
    `${domain} perfect agent, ${CONCURRENT} in flight: ${(r.episodes / r.seconds).toFixed(0)} episodes/s (${r.episodes} episodes in ${r.seconds.toFixed(2)} s, ${r.perfect}/${r.episodes} scored 1), ~${(r.bytesPerEpisode / 1024).toFixed(0)} KB heap per live episode (no GC between)`,
  );
}
