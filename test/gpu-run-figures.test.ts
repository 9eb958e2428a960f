import { describe, expect, test } from 'vitest';
import {
  type GpuSample,
  parseGpuSample,
  partsShape,
  predictedStep,
  stepRow,
  stepTable,
  trainLines,
} from '../bench/lib/gpu-run-figures.js';

// A step of 10 s recorded at 12:00:10: it ran from 12:00:00.
const line = {
  kind: 'train',
  step: 3,
  at: '2026-11-27T12:00:10.000Z',
  time_step_s: 10,
  time_generation_s: 6,
  time_train_s: 2.5,
  time_sync_s: 0.5,
  generated_tokens: 12_000,
  episodes: 256,
  trained_sequences: 200,
  response_tokens_mean: 47,
  'train/padded_tokens': 60_000,
};
const at = (iso: string): number => Date.parse(iso);
const samples: GpuSample[] = [
  { atMs: at('2026-11-27T11:59:59.000Z'), utilization: 0, memoryMiB: 99_000 }, // before the step: ignored
  { atMs: at('2026-11-27T12:00:01.000Z'), utilization: 90, memoryMiB: 40_960 },
  { atMs: at('2026-11-27T12:00:05.000Z'), utilization: 70, memoryMiB: 51_200 },
  { atMs: at('2026-11-27T12:00:09.000Z'), utilization: 80, memoryMiB: 30_720 },
  { atMs: at('2026-11-27T12:00:11.000Z'), utilization: 5, memoryMiB: 99_000 }, // after: ignored
];

describe('bench gpu-run figures', () => {
  test('nvidia-smi csv lines parse, and anything else is skipped', () => {
    expect(parseGpuSample(' 87, 40213', 5)).toEqual({ atMs: 5, utilization: 87, memoryMiB: 40213 });
    expect(parseGpuSample('[N/A], 100', 5)).toBeUndefined();
    expect(parseGpuSample('', 5)).toBeUndefined();
  });

  test("a step's row: its time split, rates, and the GPU samples taken while it ran", () => {
    const row = stepRow(line, samples);
    expect(row).toEqual({
      step: 3,
      stepS: 10,
      generationS: 6,
      trainS: 2.5,
      syncS: 0.5,
      otherS: 1,
      sampledPerS: 2000,
      trainedPerS: 24_000,
      busyShare: 0.8,
      peakGiB: 50,
    });
    expect(stepRow(line, []).busyShare).toBeUndefined();
  });

  test('the parts are measured at the shapes the step trained and sampled', () => {
    expect(partsShape(line, 256)).toEqual({
      train_rows: 200,
      train_length: 300,
      decode_batch: 256,
      prompt: 253,
      new_tokens: 47,
    });
    expect(partsShape(line, 64).decode_batch).toBe(64);
  });

  test('the predicted step is decode + train alone + the run sync, and the ratio is real over predicted', () => {
    const { predictedS, ratio } = predictedStep(stepRow(line, samples), { decode_s: 4, train_s: 3.5 });
    expect(predictedS).toBe(8);
    expect(ratio).toBe(1.25);
  });

  test('the table is markdown with one row per train step', () => {
    const lines = [{ kind: 'eval', step: 0 }, line];
    const table = stepTable(
      trainLines(lines).map((l) => stepRow(l, samples)),
      { decode_s: 4, train_s: 3.5 },
    ).split('\n');
    expect(table).toHaveLength(3);
    expect(table[2]).toBe('| 3 | 10.00 | 6.00 | 2.50 | 0.50 | 1.00 | 2000 | 24000 | 80% | 50.0 | 8.00 | 1.25 |');
  });
});

test('bench gpu-run says it needs CUDA and exits 0 on a machine without one', async () => {
  const { execa } = await import('execa');
  const done = await execa('npx', ['tsx', 'bench/gpu-run.ts'], {
    env: { CUDA_VISIBLE_DEVICES: '' },
    reject: false,
  });
  expect(done.exitCode).toBe(0);
  expect(done.stdout).toBe(
    'bench/gpu-run.ts needs a CUDA GPU; this machine has none (torch sees no CUDA device). Nothing measured.',
  );
});

test("gpu-all's report keeps each table whole and apart, and the rest in a fenced block", async () => {
  const { markdownOf } = await import('../bench/lib/gpu-run-figures.js');
  const output = [
    'NVIDIA H200, torch 2.11: bf16 matmul 660 TFLOP/s',
    '| a | b |',
    '|---|---|',
    '| 1 | 2 |',
    '',
    'where the time goes:',
    '| c |',
    '|---|',
    '| 3 |',
    'done',
  ].join('\n');
  expect(markdownOf(output)).toEqual([
    '| a | b |',
    '|---|---|',
    '| 1 | 2 |',
    '',
    '| c |',
    '|---|',
    '| 3 |',
    '',
    '```',
    'NVIDIA H200, torch 2.11: bf16 matmul 660 TFLOP/s',
    'where the time goes:',
    'done',
    '```',
  ]);
});

test('bench gpu-all says it needs CUDA and exits 0 on a machine without one', async () => {
  const { execa } = await import('execa');
  const done = await execa('npx', ['tsx', 'bench/gpu-all.ts'], { env: { CUDA_VISIBLE_DEVICES: '' }, reject: false });
  expect(done.exitCode).toBe(0);
  expect(done.stdout).toMatch(/^bench\/gpu-all.ts needs a CUDA GPU; .* Nothing measured.$/);
});
