// The arithmetic of bench/gpu-run.ts, kept apart from CUDA so the CPU tests check it: one row per
// `atk run` step (where its time went, tokens/s, the GPU's busy share and memory while it ran) and the
// step time predicted from its parts measured alone (bench/gpu.py parts) at the same shapes.
import type { MetricsLine } from '../../src/runs/metrics.js';

/** One nvidia-smi sample: when it arrived, the GPU's utilisation (0-100) and memory in use (MiB). */
export interface GpuSample {
  readonly atMs: number;
  readonly utilization: number;
  readonly memoryMiB: number;
}

/** `nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits` prints `87, 40213`. */
export function parseGpuSample(line: string, atMs: number): GpuSample | undefined {
  const [utilization, memoryMiB] = line.split(',').map((v) => Number(v.trim()));
  if (!Number.isFinite(utilization) || !Number.isFinite(memoryMiB)) return undefined;
  return { atMs, utilization: utilization!, memoryMiB: memoryMiB! };
}

/** The parts of one step measured alone (seconds), as bench/gpu.py's parts section writes them. */
export interface StepParts {
  readonly train_s: number;
  readonly decode_s: number;
}

/** The shapes bench/gpu.py's parts section measures: what the run's last step trained and sampled. */
export interface PartsShape {
  readonly train_rows: number;
  readonly train_length: number;
  readonly decode_batch: number;
  readonly prompt: number;
  readonly new_tokens: number;
}

export interface StepRow {
  readonly step: number;
  readonly stepS: number;
  /** Collecting the step's episodes: generation, tool calls and scoring, which overlap. */
  readonly generationS: number;
  readonly trainS: number;
  readonly syncS: number;
  /** Step time outside the three: batching, bookkeeping, writing trajectories. */
  readonly otherS: number;
  readonly sampledPerS: number;
  readonly trainedPerS: number;
  /** Mean GPU utilisation over the samples taken while the step ran; undefined without samples. */
  readonly busyShare: number | undefined;
  readonly peakGiB: number | undefined;
}

const num = (line: MetricsLine, key: string): number => {
  const v = line[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
};

/** Train lines only, in step order. */
export function trainLines(lines: readonly MetricsLine[]): MetricsLine[] {
  return lines.filter((l) => l.kind === 'train' && typeof l.time_step_s === 'number');
}

/** A step ran from `at - time_step_s` to `at` (its metrics line is written as it ends). */
export function stepRow(line: MetricsLine, samples: readonly GpuSample[]): StepRow {
  const stepS = num(line, 'time_step_s');
  const [generationS, trainS, syncS] = [
    num(line, 'time_generation_s'),
    num(line, 'time_train_s'),
    num(line, 'time_sync_s'),
  ];
  const end = Date.parse(String(line.at));
  const during = samples.filter((s) => s.atMs >= end - stepS * 1000 && s.atMs <= end);
  return {
    step: num(line, 'step'),
    stepS,
    generationS,
    trainS,
    syncS,
    otherS: Math.max(0, stepS - generationS - trainS - syncS),
    sampledPerS: generationS > 0 ? num(line, 'generated_tokens') / generationS : 0,
    trainedPerS: trainS > 0 ? num(line, 'train/padded_tokens') / trainS : 0,
    busyShare: during.length ? during.reduce((a, s) => a + s.utilization, 0) / during.length / 100 : undefined,
    peakGiB: during.length ? Math.max(...during.map((s) => s.memoryMiB)) / 1024 : undefined,
  };
}

/** What a step trained and sampled, for measuring its parts alone: rows x mean length for training, and one
 * decode batch of the episodes in flight (at most `maxBatch`), each sampling the step's mean response. */
export function partsShape(line: MetricsLine, maxBatch: number): PartsShape {
  const rows = Math.max(1, num(line, 'trained_sequences'));
  const length = Math.max(2, Math.round(num(line, 'train/padded_tokens') / rows));
  const newTokens = Math.max(1, Math.round(num(line, 'response_tokens_mean')));
  return {
    train_rows: rows,
    train_length: length,
    decode_batch: Math.max(1, Math.min(maxBatch, num(line, 'episodes'))),
    prompt: Math.max(1, length - newTokens),
    new_tokens: newTokens,
  };
}

/** The step time its parts predict: generation as one decode batch, training alone, and the run's own sync
 * (nothing measures a sync alone); the ratio is the real step over that sum (1.25 is the target's ceiling). */
export function predictedStep(row: StepRow, parts: StepParts): { predictedS: number; ratio: number } {
  const predictedS = parts.decode_s + parts.train_s + row.syncS;
  return { predictedS, ratio: predictedS > 0 ? row.stepS / predictedS : Number.NaN };
}

const f = (x: number | undefined, digits = 2): string => (x === undefined ? 'n/a' : x.toFixed(digits));
const share = (x: number | undefined): string => (x === undefined ? 'n/a' : `${(100 * x).toFixed(0)}%`);

/** The per-step table as markdown, so docs/gpu.md can take it as it is. */
export function stepTable(rows: readonly StepRow[], parts?: StepParts): string {
  const head = [
    '| step | step s | generation s | train s | sync s | other s | sampled tok/s | trained tok/s | GPU busy | peak GiB | predicted s | x predicted |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const body = rows.map((r) => {
    const p = parts ? predictedStep(r, parts) : undefined;
    return `| ${r.step} | ${f(r.stepS)} | ${f(r.generationS)} | ${f(r.trainS)} | ${f(r.syncS)} | ${f(r.otherS)} | ${r.sampledPerS.toFixed(0)} | ${r.trainedPerS.toFixed(0)} | ${share(r.busyShare)} | ${f(r.peakGiB, 1)} | ${f(p?.predictedS)} | ${f(p?.ratio)} |`;
  });
  return [...head, ...body].join('\n');
}

/** Each markdown table as it is (a blank line after each, so two tables never run together); everything
 * else (figure lines, logs, progress) after them in a fenced block, its last 40 lines. */
export function markdownOf(output: string): string[] {
  const tables: string[] = [];
  const rest: string[] = [];
  for (const line of output.split('\n')) {
    if (line.startsWith('|')) tables.push(line);
    else {
      if (tables.length && tables.at(-1) !== '') tables.push('');
      if (line.trim() !== '') rest.push(line);
    }
  }
  return [...tables, '```', ...rest.slice(-40), '```'];
}
