// Episodes per second against an engine double that answers instantly, collected and scored as `atk run`
// collects them (collectRollout: the Strands loop, rendering, tokenising, parsing, the calculator tool,
// the math_answer reward): 256 concurrent episodes (ATK_BENCH_EPISODES) of 3 calculator calls each (4
// model calls), Qwen3 tokenizer and template, a system prompt ATK_BENCH_PROMPT_WORDS long; plus the process's peak RSS. Then the same episodes on the
// run loop's rollout workers (`rollout.workers`: ATK_BENCH_WORKERS, default 2; 0 skips), checked to give
// results and token trajectories identical to the run thread's. As in a run, the engine client stays on
// the run thread (workers send it their requests). The double runs on a thread of its own: process CPU
// counts it, the run thread's CPU does not, so the run thread's share per turn is atk's alone; with
// workers it is the relay every engine request passes through, and 1 / that share is the most turns/s
// the run thread can relay however many cores the workers get. Each event loop's busy share (run thread,
// double, each worker) says which one the episodes waited on.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { QWEN3_TOKENIZER_DIR } from '../src/__fixtures__/tokenizers.js';
import { registerBuiltins } from '../src/builtins.js';
import { datasets } from '../src/datasets/index.js';
import type { Task } from '../src/datasets/types.js';
import { createVllmClient } from '../src/engines/vllm.js';
import { loadRecipe } from '../src/recipe/load.js';
import { collectRollout, type EpisodeKit, type Rollout, workerEpisodes } from '../src/rollout/collect.js';
import { packRollout } from '../src/run/rollout-transfer.js';
import { type RolloutWorkerPool, startRolloutWorkers } from '../src/run/rollout-workers.js';
import { buildEpisodeKit } from '../src/run/kit.js';
import { startCalculatorDouble } from './lib/calculator-double.js';
import { qwen3 } from './lib/tito-common.js';

const CONCURRENT = Number(process.env.ATK_BENCH_EPISODES ?? 256);
if (!Number.isInteger(CONCURRENT) || CONCURRENT < 1) throw new Error('ATK_BENCH_EPISODES must be a whole number >= 1');
const TURNS = CONCURRENT * 4;
const workerCount = Number(process.env.ATK_BENCH_WORKERS ?? 2);
// Words of padding in the system prompt (ATK_BENCH_PROMPT_WORDS, about a token each): long prompts show
// what a turn costs that grows with the conversation, such as moving its ids between threads.
const promptWords = Number(process.env.ATK_BENCH_PROMPT_WORDS ?? 0);
if (!Number.isInteger(promptWords) || promptWords < 0)
  throw new Error('ATK_BENCH_PROMPT_WORDS must be a whole number >= 0');
const padding = promptWords > 0 ? ` Notes ${'note '.repeat(promptWords).trim()}` : '';
registerBuiltins();
const tok = await qwen3();

const double = await startCalculatorDouble({
  callIds: tok.encode(
    '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+3"}}\n</tool_call><|im_end|>',
  ),
  answerIds: tok.encode('Answer: 5<|im_end|>'),
  toolResponse: tok.encode('<tool_response>')[0]!,
  toolTurns: 3,
});

const dir = mkdtempSync(join(tmpdir(), 'atk-bench-episodes-'));
const recipeFile = join(dir, 'bench.yaml');
writeFileSync(
  recipeFile,
  [
    'name: tito-episodes',
    'model:',
    `  path: ${QWEN3_TOKENIZER_DIR}`,
    '  engine: {kind: url, url: http://127.0.0.1:1}',
    'dataset: {name: arith}',
    'tools: [{name: calculator}]',
    'reward: {name: math_answer, options: {formats: [answer], fallback_last_number: false}}',
    'agent:',
    `  system_prompt: You are a careful calculator.${padding}`,
    '  max_turns: 8',
    '  max_new_tokens: 256',
    '  chat_template_kwargs: {enable_thinking: false}',
    '',
  ].join('\n'),
);
const loaded = await loadRecipe(recipeFile);
const engine = createVllmClient({ baseUrl: double.url, model: 'policy' });
const kit = await buildEpisodeKit({
  recipe: loaded.recipe,
  recipeDir: loaded.dir,
  recipeFile,
  dataset: await datasets.get('arith'),
  engine,
  tokenizer: tok,
  warn: () => undefined,
});

const task = (id: number): Task => ({ id: `e${id}`, prompt: `What is 2+3? (#${id})`, answer: '5', data: {} });
const ids = (from: number): number[] => Array.from({ length: CONCURRENT }, (_, i) => from + i);

/** Collects the episodes of `batch` concurrently; throws unless each made its 3 calls and scored 1. */
async function collect(on: EpisodeKit, batch: readonly number[]): Promise<unknown[]> {
  const rollouts = await Promise.all(
    batch.map((id, i) =>
      collectRollout(on, {
        task: task(id),
        group: i,
        sample: 0,
        seed: id,
        temperature: 1,
        topP: 1,
        topK: -1,
        policyVersion: 0,
      }),
    ),
  );
  const wrong = rollouts.filter((r) => r.failed || r.reward !== 1 || r.episode.stats.toolCalls !== 3);
  if (wrong.length) throw new Error(`${wrong.length} episodes went wrong: ${wrong[0]!.error ?? wrong[0]!.reward}`);
  return rollouts.map(comparable);
}

/** What a trajectory line records of a rollout, without the clocks. */
function comparable(rollout: Rollout): unknown {
  const packed = packRollout(rollout);
  const { wallMs: _w, engineMs: _e, ...stats } = packed.episode.stats;
  return { ...packed, episode: { ...packed.episode, stats } };
}

interface Timed<T> {
  readonly value: T;
  readonly seconds: number;
  /** CPU of every thread of the process (the double's included). */
  readonly cpuSeconds: number;
  /** CPU of the run thread alone. */
  readonly runThreadCpuSeconds: number;
  /** CPU of the double's thread. */
  readonly doubleCpuSeconds: number;
  /** Share of the time each event loop was busy: the run thread's, the double's, each worker's. */
  readonly busy: { readonly runThread: number; readonly double: number; readonly workers: number[] };
}

async function timed<T>(work: () => Promise<T>, workers?: RolloutWorkerPool): Promise<Timed<T>> {
  const doubleBefore = await double.cpuSeconds();
  const loops = [performance.eventLoopUtilization(), double.eventLoop(), ...(workers?.eventLoops() ?? [])];
  const cpu = process.cpuUsage();
  const thread = process.threadCpuUsage();
  const started = performance.now();
  const value = await work();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const threadUsed = process.threadCpuUsage(thread);
  // Given two readings, eventLoopUtilization returns what happened between them.
  const [runThread, doubleLoop, ...workerLoops] = [
    performance.eventLoopUtilization(),
    double.eventLoop(),
    ...(workers?.eventLoops() ?? []),
  ].map((after, i) => performance.eventLoopUtilization(after, loops[i]).utilization);
  return {
    value,
    seconds,
    cpuSeconds: (used.user + used.system) / 1e6,
    runThreadCpuSeconds: (threadUsed.user + threadUsed.system) / 1e6,
    doubleCpuSeconds: (await double.cpuSeconds()) - doubleBefore,
    busy: { runThread: runThread!, double: doubleLoop!, workers: workerLoops },
  };
}

function report(label: string, run: Timed<unknown>): void {
  const perTurn = (s: number): string => `${((s * 1000) / TURNS).toFixed(2)} ms`;
  console.log(`${label}:`);
  console.log(
    `  ${(CONCURRENT / run.seconds).toFixed(1)} episodes/s, ${(TURNS / run.seconds).toFixed(0)} model turns/s (${run.seconds.toFixed(2)} s)`,
  );
  // Wall time depends on what else the machine runs; CPU time per turn does not.
  console.log(
    `  ${perTurn(run.cpuSeconds)} of process CPU per model turn (the double's share included), so ${(TURNS / run.cpuSeconds).toFixed(0)} model turns per CPU-second`,
  );
  console.log(
    `  ${perTurn(run.runThreadCpuSeconds)} of run-thread CPU per model turn, so at most ${(TURNS / run.runThreadCpuSeconds).toFixed(0)} model turns/s through the run thread`,
  );
  // The rest of the process: rollout workers (when there are any) and V8's helper threads (GC).
  const rest = run.cpuSeconds - run.runThreadCpuSeconds - run.doubleCpuSeconds;
  console.log(
    `  ${perTurn(run.doubleCpuSeconds)} on the double's thread; ${perTurn(rest)} on the other threads (workers, GC), so ${(TURNS / rest).toFixed(0)} model turns per CPU-second there`,
  );
  // A loop that is busy while the others idle is where the episodes wait: a full run thread or double
  // caps every worker, and uneven workers mean the episodes were not spread.
  const pct = (share: number): string => `${(share * 100).toFixed(0)}%`;
  const { runThread, double: doubleBusy, workers } = run.busy;
  const perWorker = workers.length
    ? `, workers ${pct(Math.min(...workers))}-${pct(Math.max(...workers))} (mean ${pct(workers.reduce((a, b) => a + b, 0) / workers.length)})`
    : '';
  console.log(`  event loops busy: run thread ${pct(runThread)}, double ${pct(doubleBusy)}${perWorker}`);
}

await collect(kit, ids(1_000_000));
const single = await timed(() => collect(kit, ids(0)));
report(
  `${CONCURRENT} concurrent episodes x 3 calculator calls, collected and scored on the run thread (instant engine double on its own thread)`,
  single,
);
console.log(
  `  peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (includes the ~11 MB Qwen3 tokenizer JSON and the double's thread)`,
);

if (workerCount > 0) {
  const workers = await startRolloutWorkers({
    count: workerCount,
    setup: { recipe: loaded.recipe, recipeDir: loaded.dir, recipeFile, modelDir: QWEN3_TOKENIZER_DIR, tokenizer: {} },
    engine,
    warn: () => undefined,
  });
  const pooled: EpisodeKit = { ...kit, runner: workerEpisodes(workers) };
  await collect(pooled, ids(1_000_000));
  const fanned = await timed(() => collect(pooled, ids(0)), workers);
  await workers.close();
  report(`the same episodes on ${workerCount} rollout workers (rollout.workers: ${workerCount})`, fanned);
  const same = isDeepStrictEqual(fanned.value, single.value);
  console.log(
    `  results and token trajectories identical to the run thread's: ${same ? 'yes' : 'NO'}; ${(single.seconds / fanned.seconds).toFixed(2)}x its throughput`,
  );
  if (!same) process.exitCode = 1;
}
await kit.close?.();
await double.close();
