import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { takenPort } from '../__fixtures__/taken-port.js';
import { writeTinyModel } from '../__fixtures__/tiny-qwen2.js';
import { TrainerError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import type { TrainBatchInput } from './client.js';
import { launchTrainer, trainerCommand, type TrainerProcess } from './launch.js';

// The real trainer (python -m atk_trainer) on a tiny random qwen2; one process shared by the tests.

/** The process exists (a zombie still counts: stop must have waited for it to be reaped). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('launchTrainer', () => {
  const dir = mkdtempSync(join(tmpdir(), 'atk-trainer-'));
  const modelDir = join(dir, 'model');
  let trainer: TrainerProcess;
  beforeAll(async () => {
    writeTinyModel(modelDir);
    trainer = await launchTrainer({ logFile: join(dir, 'logs', 'trainer.log'), threads: 1, startupTimeoutMs: 60_000 });
  });
  afterAll(async () => {
    await trainer?.stop();
  });

  test('returns a healthy trainer that trains a step on a tiny random model', async () => {
    expect(await trainer.client.health()).toMatchObject({ status: 'ok', model_loaded: false });
    const loaded = await trainer.client.loadModel({
      path: modelDir,
      init: 'random',
      backend: 'builtin',
      device: 'cpu',
      dtype: 'float32',
      train: { learning_rate: 1e-2, seed: 0 },
    });
    expect([loaded.backend, loaded.policy_version, loaded.trainable_parameters > 0]).toStrictEqual([
      'builtin',
      0,
      true,
    ]);
    const batch = JSON.parse(
      readFileSync(join(projectRoot(), 'trainer', 'protocol', 'train_step.request.json'), 'utf8'),
    ) as TrainBatchInput;
    const step = await trainer.client.trainStep(batch);
    expect([step.policyVersion, step.metrics.tokens, step.metrics.sequences]).toStrictEqual([1, 5, 2]);
    expect(Number.isFinite(step.metrics.loss) && step.metrics.mismatch_max >= 0).toBe(true);
    expect((await trainer.client.health()).policy_version).toBe(1);
    const engine = await fetch(`${trainer.engineUrl}/health`);
    expect(engine.status).toBe(200);
  });

  test('rejects a malformed batch with a TrainerError and keeps serving', async () => {
    const error = await trainer.client
      .trainStep({ loss: 'pg', sequences: [{ token_ids: [1, 2], loss_mask: [0], logprobs: [0, 0], advantage: 1 }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrainerError);
    expect((error as TrainerError).message).toMatch(
      /answered 400: sequences\[0\]\.loss_mask: expected 2 values .*\(log: .*trainer\.log\)$/,
    );
    expect((await trainer.client.health()).status).toBe('ok');
  });

  test('rejects a failure inside the trainer with the Python exception line and the log path', async () => {
    // A checkpoint whose trainer state is not a pickle: torch.load fails where no check anticipated it.
    const checkpoint = join(dir, 'corrupt', 'step-00001');
    mkdirSync(checkpoint, { recursive: true });
    writeFileSync(join(checkpoint, 'trainer_state.pt'), 'not a pickle');
    const error = await trainer.client.loadCheckpoint(checkpoint).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrainerError);
    expect((error as TrainerError).message).toMatch(
      /answered 5\d\d: [\w.]*UnpicklingError: .*\(log: .*trainer\.log\)$/,
    );
    expect((await trainer.client.health()).status).toBe('ok');
  });

  test('rejects a startup crash with its exception line and the log path', async () => {
    const taken = await takenPort();
    const logFile = join(dir, 'logs', 'crash.log');
    const error = await launchTrainer({ logFile, port: taken.port, threads: 1, startupTimeoutMs: 60_000 }).catch(
      (e: unknown) => e,
    );
    taken.release();
    expect(error).toBeInstanceOf(TrainerError);
    expect((error as TrainerError).message).toMatch(
      /^trainer exited during startup \(exit \d+\): .*Address already in use.* \(log: .*crash\.log\)$/,
    );
    expect((error as TrainerError).logPath).toBe(logFile);
  });

  test('returns a trainer on another port when the one it picked was taken before it could bind it', async () => {
    const { picked, pickPort, release } = await takenPort();
    const logFile = join(dir, 'logs', 'taken.log');
    const second = await launchTrainer({ logFile, threads: 1, startupTimeoutMs: 60_000, pickPort }).finally(release);
    try {
      expect(picked).toHaveLength(2);
      expect(second.baseUrl).toBe(`http://127.0.0.1:${picked[1]}`);
      expect((await second.client.health()).status).toBe('ok');
      expect(readFileSync(logFile, 'utf8')).toMatch(/Address already in use/);
    } finally {
      await second.stop();
    }
  });

  test('rejects a startup that outlasts its timeout', async () => {
    const error = await launchTrainer({
      logFile: join(dir, 'logs', 'slow.log'),
      threads: 1,
      startupTimeoutMs: 1,
    }).catch((e: unknown) => e);
    expect((error as TrainerError).message).toMatch(/^trainer did not become healthy within 0.001 s/);
  });

  test('returns from stop only once the process is gone', async () => {
    const other = await launchTrainer({
      logFile: join(dir, 'logs', 'other.log'),
      threads: 2,
      startupTimeoutMs: 60_000,
    });
    expect(alive(other.pid)).toBe(true);
    expect(readFileSync(other.logFile, 'utf8')).toMatch(
      /serving on http:\/\/127\.0\.0\.1:\d+ \(torch .*, 2 threads(, OPENBLAS_CORETYPE=\w+)?\)/,
    ); // the threads setting reaches torch
    await other.stop();
    expect(alive(other.pid)).toBe(false);
    await other.stop(); // idempotent
  });

  test('leaves no timer that keeps atk running once the process is gone', async () => {
    const other = await launchTrainer({
      logFile: join(dir, 'logs', 'third.log'),
      threads: 1,
      startupTimeoutMs: 60_000,
    });
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    await other.stop(60_000);
    // A pending grace timer would hold the event loop (and `atk run`'s exit) for the whole grace.
    expect(timers()).toBeLessThanOrEqual(before);
  });
});

describe('trainerCommand', () => {
  const trainerArgs = (port: number, threads: number) => [
    '-m',
    'atk_trainer',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--parent-pid',
    String(process.pid),
    '--threads',
    String(threads),
  ];

  test("returns torchrun's module form with one rank per GPU and those GPUs visible for two trainer GPUs", () => {
    const command = trainerCommand('/venv/bin/python', 4100, { threads: 2, gpus: [0, 1] });
    expect(command.file).toBe('/venv/bin/python');
    expect(command.args).toStrictEqual([
      '-m',
      'atk_trainer.torchrun',
      '--standalone',
      '--nproc_per_node',
      '2',
      ...trainerArgs(4100, 2),
    ]);
    expect([command.env.CUDA_VISIBLE_DEVICES, command.env.OMP_NUM_THREADS]).toStrictEqual(['0,1', '2']);
    expect(command.env.MALLOC_ARENA_MAX).toBe(process.env.MALLOC_ARENA_MAX ?? '2');
    expect([command.env.MALLOC_MMAP_THRESHOLD_, command.env.MALLOC_TRIM_THRESHOLD_]).toStrictEqual([
      process.env.MALLOC_MMAP_THRESHOLD_ ?? '268435456',
      process.env.MALLOC_TRIM_THRESHOLD_ ?? '1073741824',
    ]);
    expect(command.env.PYTHONPATH?.split(delimiter)[0]).toBe(join(projectRoot(), 'trainer'));
  });

  test('returns the plain module for one GPU (made visible) or none (nothing set)', () => {
    const one = trainerCommand('python3', 4101, { threads: 1, gpus: [3], maxBatch: 64, prefixCacheTokens: 'auto' });
    expect([one.args, one.env.CUDA_VISIBLE_DEVICES]).toStrictEqual([
      [...trainerArgs(4101, 1), '--max-batch', '64', '--prefix-cache-tokens', 'auto'],
      '3',
    ]);
    const none = trainerCommand('python3', 4102, { threads: 1, env: { CUDA_VISIBLE_DEVICES: '7' } });
    expect([none.args, none.env.CUDA_VISIBLE_DEVICES]).toStrictEqual([trainerArgs(4102, 1), '7']);
  });
});
