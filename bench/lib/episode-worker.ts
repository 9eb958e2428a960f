// A worker thread of the tito-episodes bench: its own tokenizer, engine client and event loop, running
// the episodes it is sent against the main thread's engine double and posting back what each produced.
import { parentPort, workerData } from 'node:worker_threads';
import { createVllmClient } from '../../src/engines/vllm.js';
import { runEpisode } from '../../src/rollout/episode.js';
import { agentSpec, qwen3 } from './tito-common.js';
import { episodeBatch, type EpisodeOutcome } from './tito-episode-batch.js';

const { url } = workerData as { url: string };
const tok = await qwen3();
const engine = createVllmClient({ baseUrl: url, model: 'policy' });
parentPort!.on('message', async (ids: readonly number[]) => {
  const outcomes: EpisodeOutcome[] = await episodeBatch(ids, (task) =>
    runEpisode({ task, spec: agentSpec(8), engine, tokenizer: tok, policyVersion: 0, timeoutMs: 120_000 }),
  );
  parentPort!.postMessage(outcomes);
});
parentPort!.postMessage('ready');
