import { describe, expect, test } from 'vitest';
import { slurmGpusPerNode } from './allocation.js';
import { engineAuth } from '../engines/launch/engine-command.js';
import { hostsCommand } from './launchers.js';
import { multiNodeTrainerCommand } from './multinode-trainer.js';
import { shellQuote } from '../util/shell-quote.js';
import { srunCommand } from './slurm-steps.js';

const command = { file: 'python3', args: ['-m', 'atk_trainer'], env: { PYTHONPATH: '/t' } };

describe('srunCommand', () => {
  test('returns srun pinning one task per node to the named nodes as a named, overlapping step', () => {
    expect(
      srunCommand({ jobId: '7', name: 'atk-1-trainer', nodes: ['n1', 'n2'], gpusPerNode: 4 }, command),
    ).toStrictEqual({
      file: 'srun',
      args: [
        '--jobid=7',
        '--nodes=2',
        '--ntasks=2',
        '--ntasks-per-node=1',
        '--nodelist=n1,n2',
        '--job-name=atk-1-trainer',
        '--overlap',
        '--kill-on-bad-exit=1',
        '--export=ALL',
        '--unbuffered',
        '--gres=gpu:4',
        '--',
        'python3',
        '-m',
        'atk_trainer',
      ],
      env: { PYTHONPATH: '/t' },
    });
  });
});

describe('hostsCommand', () => {
  test("returns the template with {host} filled in, then env with the command's environment, then the command", () => {
    expect(hostsCommand(['ssh', '-o', 'BatchMode=yes', '{host}'], 'gpu2', command)).toStrictEqual({
      file: 'ssh',
      args: ['-o', 'BatchMode=yes', 'gpu2', 'env', 'PYTHONPATH=/t', 'python3', '-m', 'atk_trainer'],
      env: { PYTHONPATH: '/t' },
    });
  });
});

describe('engineAuth', () => {
  test('returns vLLM with VLLM_API_KEY, SGLang with --api-key, and the command unchanged without a token', () => {
    expect(engineAuth('vllm', command, 'tok').env).toStrictEqual({ PYTHONPATH: '/t', VLLM_API_KEY: 'tok' });
    expect(engineAuth('sglang', command, 'tok').args).toStrictEqual(['-m', 'atk_trainer', '--api-key', 'tok']);
    expect(engineAuth('vllm', command, undefined)).toBe(command);
  });
});

describe('slurmGpusPerNode', () => {
  test('returns the count from SLURM_GPUS_ON_NODE, SLURM_GPUS_PER_NODE (typed or not) or SLURM_JOB_GPUS, else undefined', () => {
    expect(
      [{ SLURM_GPUS_ON_NODE: '4' }, { SLURM_GPUS_PER_NODE: 'a100:2' }, { SLURM_JOB_GPUS: '0,1,2' }, {}].map(
        slurmGpusPerNode,
      ),
    ).toStrictEqual([4, 2, 3, undefined]);
  });
});

describe('shellQuote', () => {
  test('returns safe words as they are and quotes the rest', () => {
    expect(['/a/b.yaml', 'x=1', "it's here"].map(shellQuote)).toStrictEqual(['/a/b.yaml', 'x=1', "'it'\\''s here'"]);
  });
});

describe('multiNodeTrainerCommand', () => {
  test('returns one torchrun per node with the node rank from SLURM_NODEID, from a one-node or a torchrun command', () => {
    const expected = {
      file: 'sh',
      args: [
        '-c',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, evaluated by sh on the node
        'exec "$0" -m atk_trainer.torchrun --node_rank "${SLURM_NODEID:?}" "$@"',
        'python3',
        '--nnodes',
        '2',
        '--nproc_per_node',
        '4',
        '--master_addr',
        '10.0.0.1',
        '--master_port',
        '29500',
        '-m',
        'atk_trainer',
        '--host',
        '10.0.0.1',
      ],
    };
    const oneNode = { file: 'python3', args: ['-m', 'atk_trainer', '--host', '10.0.0.1'], env: {} };
    const torchrun = {
      ...oneNode,
      args: [
        '-m',
        'atk_trainer.torchrun',
        '--standalone',
        '--nproc_per_node',
        '4',
        '-m',
        'atk_trainer',
        '--host',
        '10.0.0.1',
      ],
    };
    expect([
      multiNodeTrainerCommand(oneNode, 2, 4, '10.0.0.1', 29500),
      multiNodeTrainerCommand(torchrun, 2, 4, '10.0.0.1', 29500),
    ]).toStrictEqual([expected, expected]);
  });
});
