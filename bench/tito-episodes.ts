// Episodes per second with an engine double that answers instantly: 256 concurrent episodes of 3 tool
// turns each (4 model calls), Qwen3 tokenizer and template; plus the process's peak RSS.
import { createVllmClient } from '../src/engines/vllm.js';
import { runEpisode } from '../src/rollout/episode.js';
import { agentSpec, instantDouble, qwen3 } from './lib/tito-common.js';

const CONCURRENT = 256;
const tok = await qwen3();
const double = await instantDouble(tok, 3);
const engine = createVllmClient({ baseUrl: double.url, model: 'policy' });

async function batch(tag: string): Promise<number> {
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: CONCURRENT }, (_, i) =>
      runEpisode({
        task: { id: `${tag}${i}`, prompt: `What is 2+3? (#${i})`, data: {} },
        spec: agentSpec(8),
        engine,
        tokenizer: tok,
        policyVersion: 0,
        timeoutMs: 120_000,
      }),
    ),
  );
  const failed = results.filter((r) => r.error || r.stats.toolCalls !== 3);
  if (failed.length) throw new Error(`${failed.length} episodes failed: ${failed[0].error ?? failed[0].finishReason}`);
  return (performance.now() - started) / 1000;
}

await batch('warm');
const cpuBefore = process.cpuUsage();
const seconds = await batch('run');
const cpu = process.cpuUsage(cpuBefore);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
await double.close();
console.log(`${CONCURRENT} concurrent episodes x 3 tool turns (instant engine double, in-process):`);
console.log(
  `  ${(CONCURRENT / seconds).toFixed(1)} episodes/s, ${((CONCURRENT * 4) / seconds).toFixed(0)} model turns/s (${seconds.toFixed(2)} s)`,
);
// Wall time depends on what else the machine runs; CPU time per turn does not (the double's share included).
console.log(
  `  ${((cpuSeconds * 1000) / (CONCURRENT * 4)).toFixed(2)} ms of process CPU per model turn (${cpuSeconds.toFixed(2)} s), so ${((CONCURRENT * 4) / cpuSeconds).toFixed(0)} model turns per CPU-second`,
);
console.log(
  `  peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (includes the ~11 MB Qwen3 tokenizer JSON and the double)`,
);
