import { describe, expect, test } from 'vitest';
import { loadRecipe } from '../recipe/index.js';
import { EngineSchema } from '../recipe/schema.js';
import {
  cpuVllmEngine,
  probeCpuEngineFacts,
  withCpuEngineSettings,
  type CpuEngineFacts,
} from './cpu-engine-settings.js';
import '../builtins.js';

const GIB = 1024 ** 3;
const cpu: CpuEngineFacts = { gpus: 0, cores: '0-1', availableBytes: 23.5 * GIB };

describe('cpuVllmEngine', () => {
  test('returns the engine with chunked prefill off, a tenth of the available memory for the KV cache and the allowed cores bound', () => {
    const engine = EngineSchema.parse({ kind: 'vllm', args: ['--dtype', 'float32'] });
    expect(cpuVllmEngine(engine, cpu)).toStrictEqual({
      ...engine,
      args: ['--dtype', 'float32', '--no-enable-chunked-prefill'],
      env: { VLLM_CPU_KVCACHE_SPACE: '2', VLLM_CPU_OMP_THREADS_BIND: '0-1' },
    });
    expect(cpuVllmEngine(engine, { ...cpu, availableBytes: 3 * GIB }).env.VLLM_CPU_KVCACHE_SPACE).toBe('1');
  });

  test("returns the recipe's own values where it sets them, and is idempotent", () => {
    const engine = EngineSchema.parse({
      kind: 'vllm',
      args: ['--enable-chunked-prefill'],
      env: { VLLM_CPU_KVCACHE_SPACE: '1', OTHER: 'x' },
    });
    const once = cpuVllmEngine(engine, cpu);
    expect(once).toStrictEqual({
      ...engine,
      env: { VLLM_CPU_KVCACHE_SPACE: '1', VLLM_CPU_OMP_THREADS_BIND: '0-1', OTHER: 'x' },
    });
    expect(cpuVllmEngine(once, { ...cpu, cores: '0' })).toStrictEqual(once);
  });
});

describe('withCpuEngineSettings', () => {
  test('returns a vllm recipe with the CPU settings on a machine without a GPU, and unchanged with one or on another engine kind', async () => {
    const { recipe } = await loadRecipe('recipes/quickstart.yaml', ['model.engine.kind=vllm']);
    const resolved = await withCpuEngineSettings(recipe, async () => cpu);
    expect([resolved.model.engine.args, resolved.model.engine.env]).toStrictEqual([
      ['--no-enable-chunked-prefill'],
      { VLLM_CPU_KVCACHE_SPACE: '2', VLLM_CPU_OMP_THREADS_BIND: '0-1' },
    ]);
    expect({ ...resolved, model: recipe.model }).toStrictEqual(recipe);
    expect(await withCpuEngineSettings(recipe, async () => ({ ...cpu, gpus: 1 }))).toBe(recipe);
    const embedded = (await loadRecipe('recipes/quickstart.yaml')).recipe;
    let probed = false;
    const probe = async (): Promise<CpuEngineFacts> => {
      probed = true;
      return cpu;
    };
    expect([await withCpuEngineSettings(embedded, probe), probed]).toStrictEqual([embedded, false]);
  });
});

describe('probeCpuEngineFacts', () => {
  test("returns this process's cores as a Linux CPU list and a positive amount of available memory", async () => {
    const facts = await probeCpuEngineFacts();
    expect(facts.cores).toMatch(/^\d+(-\d+)?(,\d+(-\d+)?)*$/);
    expect(facts.availableBytes).toBeGreaterThan(0);
  });
});
