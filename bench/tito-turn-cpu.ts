// CPU time of atk's own work per model turn (rendering new messages, parsing, tool dispatch, the Strands
// loop), excluding engine time, at 1, 8 and 32 turns of history. TITO renders only what is new, so this
// must not grow with history: the turn-32 / turn-1 ratio should stay near 1.
import { createVllmClient } from '../src/engines/vllm.js';
import { runEpisode } from '../src/rollout/episode.js';
import { agentSpec, instantDouble, median, qwen3, timedEngine } from './lib/tito-common.js';

const HISTORY = [1, 8, 32];
const EPISODES = 15;
const tok = await qwen3();
const double = await instantDouble(tok, 40);
const vllm = createVllmClient({ baseUrl: double.url, model: 'policy' });

const perHistory = new Map<number, number[]>(HISTORY.map((h) => [h, []]));
for (let e = 0; e < EPISODES + 2; e++) {
  const gaps: number[] = [];
  const result = await runEpisode({
    task: { id: `b${e}`, prompt: 'What is 2+3? Use the tool many times.', data: {} },
    spec: agentSpec(34),
    engine: timedEngine(vllm, gaps),
    tokenizer: tok,
    policyVersion: 0,
    timeoutMs: 60_000,
  });
  if (result.error) throw new Error(result.error);
  // gaps[k-1] is the work before model call k+1, i.e. with k model turns of history; the first two episodes warm the JIT.
  if (e >= 2) for (const h of HISTORY) perHistory.get(h)!.push(gaps[h - 1]);
}
await double.close();
const ms = HISTORY.map((h) => median(perHistory.get(h)!));
console.log(`atk CPU per turn (median of ${EPISODES} episodes, Qwen3 tokenizer, engine time excluded):`);
for (const [i, h] of HISTORY.entries()) console.log(`  history ${String(h).padStart(2)} turns: ${ms[i].toFixed(2)} ms`);
console.log(`  ratio turn-32 / turn-1: ${(ms[2] / ms[0]).toFixed(2)}`);
