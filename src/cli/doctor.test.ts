import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { PythonInfo } from '../trainer/find-python.js';
import {
  blasCheck,
  dataDirCheck,
  doctorChecks,
  gpuCheck,
  gpuMemoryGiB,
  gpuRecipeRows,
  nodeCheck,
  torchCheck,
} from './doctor-checks.js';
import { runDoctor } from './doctor.js';

const torch: PythonInfo = {
  python: '/usr/bin/python3',
  pythonVersion: '3.11.2',
  torchVersion: '1.13.0',
  cuda: false,
  gpuCount: 0,
  cudaBuild: null,
  gpus: [],
  transformers: null,
  peft: null,
  blas: 'openblas',
  blasLibrary: '/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3',
};

describe('doctor checks', () => {
  test('returns pass for Node 22 and fail with the install command for Node 20', () => {
    expect(nodeCheck('22.1.0').status).toBe('pass');
    expect(nodeCheck('20.19.0')).toStrictEqual({
      check: 'node',
      status: 'fail',
      detail: 'v20.19.0; atk needs >= 22',
      fix: 'run npm ci in the atk folder (Node 22 comes as the package dependency node@22), or: npm install --prefix ~/.cache/atk/node22 node@22 && export PATH=~/.cache/atk/node22/node_modules/.bin:$PATH',
    });
  });

  test('returns fail naming atk setup and the apt packages when no Python imports torch', () => {
    expect(torchCheck(null, ['python3: not found'])).toMatchObject({
      status: 'fail',
      detail: 'no Python can import torch (python3: not found)',
      fix: expect.stringMatching(/^atk setup .*python3-torch libopenblas0-pthread through apt/),
    });
  });

  test('returns fail for the reference BLAS on CPU torch, pass for OpenBLAS', () => {
    expect(blasCheck(torch).status).toBe('pass');
    expect(
      blasCheck({ ...torch, blas: 'reference', blasLibrary: '/usr/lib/x86_64-linux-gnu/blas/libblas.so.3' }),
    ).toMatchObject({ status: 'fail', fix: expect.stringContaining('libopenblas0-pthread') });
  });

  test('returns warn without a GPU, warn naming the Python whose torch lacks CUDA, pass listing CUDA GPUs', async () => {
    const smi = (stdout: string | null) => async () => stdout; // what nvidia-smi --format=csv,noheader prints; null: missing or failed
    const h100s = 'NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15\nNVIDIA H100 80GB HBM3,81559 MiB, 550.54.15\n';
    const listed = '2: NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15; NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15';
    const none = {
      check: 'gpus',
      status: 'warn',
      detail: 'no NVIDIA GPU found (nvidia-smi)',
      fix: 'only needed for vllm/sglang recipes and GPU training; the embedded engine runs on CPU',
    };
    expect(await gpuCheck(torch, smi(null))).toStrictEqual(none);
    expect(await gpuCheck(torch, smi('\n'))).toStrictEqual(none);
    expect(await gpuCheck(torch, smi(h100s))).toStrictEqual({
      check: 'gpus',
      status: 'warn',
      detail: `${listed}; but torch 1.13.0 in /usr/bin/python3 is a CPU build`,
      fix: "atk setup --gpu --yes: a CUDA build of torch into atk's venv, which the trainer then uses (or set ATK_PYTHON to a Python with one)",
    });
    const cuda13 = { ...torch, torchVersion: '2.15.0+cu132', cudaBuild: '13.2' };
    expect(await gpuCheck(cuda13, smi(h100s))).toStrictEqual({
      check: 'gpus',
      status: 'warn',
      detail: `${listed}; but torch 2.15.0+cu132 (CUDA 13.2 build) sees none`,
      fix: 'CUDA 13.2 needs an NVIDIA driver >= 580 (found 550.54.15); update the driver, or check CUDA_VISIBLE_DEVICES',
    });
    expect(await gpuCheck({ ...cuda13, cuda: true, gpuCount: 2 }, smi(h100s))).toStrictEqual({
      check: 'gpus',
      status: 'pass',
      detail: listed,
    });
  });

  test('returns the torch build and the GPUs it sees', () => {
    expect(
      torchCheck({ ...torch, torchVersion: '2.15.0+cu132', cudaBuild: '13.2', cuda: true, gpuCount: 1 }, []).detail,
    ).toBe(
      '/usr/bin/python3 (Python 3.11.2): torch 2.15.0+cu132 (CUDA 13.2 build, sees 1 GPU); built-in model code for qwen2, qwen3, llama and mistral (no transformers)',
    );
    expect(torchCheck(torch, []).detail).toMatch(/: torch 1\.13\.0 \(CPU build\); /);
  });

  test("returns each GPU's memory in GiB from nvidia-smi's lines", () => {
    expect(
      gpuMemoryGiB('NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15\nNVIDIA L4, 23034 MiB, 550.54.15\n'),
    ).toStrictEqual([81559 / 1024, 23034 / 1024]);
    expect(gpuMemoryGiB(null)).toStrictEqual([]);
  });

  test('returns one row per shipped GPU recipe with GPUs, saying which fit, and one row listing their needs without', async () => {
    const rows = await gpuRecipeRows([79.6]);
    expect(rows.find((r) => r.check === 'recipe gsm8k-one-gpu')).toStrictEqual({
      check: 'recipe gsm8k-one-gpu',
      status: 'pass',
      detail: 'fits: needs 1 GPU of >= 4 GiB',
    });
    expect(rows.find((r) => r.check === 'recipe gsm8k-grpo')).toMatchObject({
      status: 'warn',
      detail: 'needs 2 GPUs of >= 5 GiB, has 1',
    });
    expect(rows.map((r) => r.check)).not.toContain('recipe quickstart'); // a CPU recipe
    expect(rows.map((r) => r.check)).not.toContain('recipe gsm8k-grpo-slurm'); // placed by Slurm
    const none = await gpuRecipeRows([]);
    expect(none).toHaveLength(1);
    expect(none[0]).toMatchObject({ check: 'gpu recipes', status: 'warn' });
    expect(none[0]!.detail).toContain('gsm8k-one-gpu (1 GPU of >= 4 GiB)');
  });

  test('returns warn for a missing or empty data directory and pass listing the datasets', () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-doctor-'));
    expect(dataDirCheck(join(dir, 'absent')).status).toBe('warn');
    expect(dataDirCheck(dir).status).toBe('warn');
    mkdirSync(join(dir, 'gsm8k'));
    expect(dataDirCheck(dir)).toStrictEqual({ check: 'data dir', status: 'pass', detail: `${dir}: gsm8k` });
  });

  test('returns a row for every check on this machine, with a fix on every row that is not pass', async () => {
    const rows = await doctorChecks();
    // The GPU recipes are one row without a GPU, one row each with GPUs.
    const recipeRows = rows.filter((r) => r.check === 'gpu recipes' || r.check.startsWith('recipe '));
    expect(recipeRows.length).toBeGreaterThan(0);
    expect(rows.filter((r) => !recipeRows.includes(r)).map((r) => r.check)).toStrictEqual([
      'node',
      'python + torch',
      'openblas',
      'gpus',
      'vllm',
      'sglang',
      'bubblewrap',
      'data dir',
    ]);
    expect(rows.filter((r) => r.status !== 'pass' && !r.fix)).toStrictEqual([]);
    expect(rows[0]!.status).toBe('pass');
  });
});

describe('runDoctor', () => {
  test('returns a plain table with counts, failed only when a row fails', async () => {
    const warn = await runDoctor({ tty: false }, [
      nodeCheck('22.0.0'),
      { check: 'gpus', status: 'warn', detail: 'none', fix: 'optional' },
    ]);
    expect(warn.failed).toBe(false);
    expect(warn.text.split('\n').map((l) => l.split(/\s{2,}/))).toStrictEqual([
      ['check', 'status', 'found', 'fix'],
      ['node', 'pass', 'v22.0.0'],
      ['gpus', 'warn', 'none', 'optional'],
      ['1 pass, 1 warn, 0 fail'],
      [''],
    ]);
    expect((await runDoctor({ tty: false }, [nodeCheck('18.0.0')])).failed).toBe(true);
  });
});
