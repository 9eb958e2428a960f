// Episodes per second with an engine double that answers instantly: 256 concurrent episodes of 3 tool
// turns each (4 model calls), Qwen3 tokenizer and template; plus the process's peak RSS. Then the same
// episodes spread over worker threads (ATK_BENCH_WORKERS, default 2; 0 skips), each with its own event
// loop, tokenizer and engine client, checked to give results and token trajectories identical to the
// single-thread run. The double stays on the main thread, so it takes a share of that thread's CPU.
import { isDeepStrictEqual } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createVllmClient } from '../src/engines/vllm.js';
import { runEpisode } from '../src/rollout/episode.js';
import { agentSpec, instantDouble, qwen3 } from './lib/tito-common.js';
import { episodeBatch, type EpisodeOutcome } from './lib/tito-episode-batch.js';

const CONCURRENT = 256;
const TURNS = CONCURRENT * 4;
const workerCount = Number(process.env.ATK_BENCH_WORKERS ?? 2);
const tok = await qwen3();
const double = await instantDouble(tok, 3);
const engine = createVllmClient({ baseUrl: double.url, model: 'policy' });
const ids = (from: number): number[] => Array.from({ length: CONCURRENT }, (_, i) => from + i);

function inThisThread(batch: readonly number[]): Promise<EpisodeOutcome[]> {
  return episodeBatch(batch, (task) =>
    runEpisode({ task, spec: agentSpec(8), engine, tokenizer: tok, policyVersion: 0, timeoutMs: 120_000 }),
  );
}

/** Wall seconds and process CPU seconds (every thread) of `work`. */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number; cpuSeconds: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { value, seconds: (performance.now() - started) / 1000, cpuSeconds: (used.user + used.system) / 1e6 };
}

function report(label: string, seconds: number, cpuSeconds: number): void {
  console.log(`${label}:`);
  console.log(
    `  ${(CONCURRENT / seconds).toFixed(1)} episodes/s, ${(TURNS / seconds).toFixed(0)} model turns/s (${seconds.toFixed(2)} s)`,
  );
  // Wall time depends on what else the machine runs; CPU time per turn does not (the double's share included).
  console.log(
    `  ${((cpuSeconds * 1000) / TURNS).toFixed(2)} ms of process CPU per model turn (${cpuSeconds.toFixed(2)} s), so ${(TURNS / cpuSeconds).toFixed(0)} model turns per CPU-second`,
  );
}

await inThisThread(ids(1_000_000));
const single = await timed(() => inThisThread(ids(0)));
report(
  `${CONCURRENT} concurrent episodes x 3 tool turns (instant engine double, in-process)`,
  single.seconds,
  single.cpuSeconds,
);
console.log(
  `  peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (includes the ~11 MB Qwen3 tokenizer JSON and the double)`,
);

if (workerCount > 0) {
  const workers = await Promise.all(
    Array.from({ length: workerCount }, async () => {
      const worker = new Worker(new URL('./lib/episode-worker.ts', import.meta.url), {
        workerData: { url: double.url },
      });
      await new Promise((resolve) => worker.once('message', resolve));
      return worker;
    }),
  );
  const send = (worker: Worker, batch: number[]): Promise<EpisodeOutcome[]> =>
    new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.postMessage(batch);
    });
  // The same episode ids, dealt round-robin, so every worker gets an equal share.
  const spread = async (batch: number[]): Promise<EpisodeOutcome[]> =>
    (
      await Promise.all(
        workers.map((w, k) =>
          send(
            w,
            batch.filter((_, i) => i % workerCount === k),
          ),
        ),
      )
    )
      .flat()
      .sort((a, b) => a.id - b.id);
  await spread(ids(1_000_000));
  const fanned = await timed(() => spread(ids(0)));
  await Promise.all(workers.map((w) => w.terminate()));
  report(`the same episodes over ${workerCount} worker threads`, fanned.seconds, fanned.cpuSeconds);
  const same = isDeepStrictEqual(fanned.value, single.value);
  console.log(
    `  results and token trajectories identical to the single-thread run: ${same ? 'yes' : 'NO'}; ${(single.seconds / fanned.seconds).toFixed(2)}x its throughput`,
  );
  if (!same) process.exitCode = 1;
}
await double.close();
