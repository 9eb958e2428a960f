import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { runValidate } from '../cli/validate.js';
import { ConfigError } from '../errors/index.js';
import { loadRecipe, type ResolvedRecipe } from '../recipe/index.js';
import { projectRoot } from '../util/paths.js';
import { checkClusterPlacement, planPlacement, readAllocation } from './index.js';

const slurmRecipe = join(projectRoot(), 'recipes', 'gsm8k-grpo-slurm.yaml');
const inAllocation = (nodelist: string, gpus?: string): NodeJS.ProcessEnv => ({
  SLURM_JOB_ID: '42',
  SLURM_JOB_NODELIST: nodelist,
  ...(gpus ? { SLURM_GPUS_ON_NODE: gpus } : {}),
});

async function load(overrides: readonly string[] = []): Promise<ResolvedRecipe> {
  return (await loadRecipe(slurmRecipe, overrides)).recipe;
}

afterEach(() => void vi.unstubAllEnvs());

describe('planPlacement', () => {
  test('returns the trainer on the first node and one engine replica on each of the next two', async () => {
    const recipe = await load();
    const allocation = readAllocation(recipe.cluster, inAllocation('gpu[1-3]', '1'))!;
    expect(planPlacement(recipe, allocation)).toStrictEqual({
      placement: {
        trainerNodes: ['gpu1'],
        engineReplicas: [
          { replica: 0, node: 'gpu2' },
          { replica: 1, node: 'gpu3' },
        ],
      },
      problems: [],
    });
  });

  test('returns two replicas sharing one node when model.engine.nodes is 1', async () => {
    const recipe = await load(['model.engine.nodes=1', 'model.engine.gpus=[0, 1]']);
    expect(planPlacement(recipe, readAllocation(recipe.cluster, inAllocation('a,b', '2'))!).placement).toStrictEqual({
      trainerNodes: ['a'],
      engineReplicas: [
        { replica: 0, node: 'b' },
        { replica: 1, node: 'b' },
      ],
    });
  });

  test('rejects an allocation with too few nodes and GPUs, saying what is missing', async () => {
    const recipe = await load();
    expect(checkClusterPlacement(recipe, inAllocation('n[1-2]'))).toStrictEqual([
      {
        path: 'cluster.launcher',
        message:
          'needs 3 nodes (model.trainer.nodes 1 + model.engine.nodes 2 for 2 engine replicas); the allocation (SLURM_JOB_NODELIST=n[1-2]: n1, n2) has 2: 1 missing',
      },
      {
        path: 'model.engine.gpus_per_replica',
        message:
          'each engine node needs 1 GPUs (1 replica x 1); the allocation reports no GPUs (request them, e.g. sbatch --gpus-per-node)',
      },
    ]);
  });

  test('rejects trainer nodes and engine nodes on the local launcher, auth none off loopback and a host template without {host}', async () => {
    const paths = async (overrides: readonly string[]): Promise<unknown> =>
      ((await load(overrides).catch((e: unknown) => e)) as ConfigError).issues.map((i) => [i.path, i.message]);
    // The local launcher also puts both replicas and the trainer on this machine's GPU 0, which the engine settings refuse.
    expect(await paths(['cluster.launcher=local', 'model.trainer.nodes=2'])).toEqual(
      expect.arrayContaining([
        ['model.trainer.nodes', '2 nodes need cluster.launcher slurm or hosts; local is one machine'],
        ['model.engine.nodes', 'placing replicas on nodes needs cluster.launcher slurm or hosts; local is one machine'],
      ]),
    );
    expect(
      await paths(['cluster.launcher=hosts', 'cluster.auth=none', 'cluster.command=[env]', 'cluster.hosts=[h1]']),
    ).toStrictEqual([
      [
        'model.engine.gpus_per_replica',
        'each engine node needs 1 GPUs (1 replica x 1); the allocation reports no GPUs (request them, e.g. sbatch --gpus-per-node)',
      ],
      ['cluster.auth', 'hosts puts listeners off loopback; they must require the per-run token (auth: token)'],
      ['cluster.command', 'must contain {host} (e.g. [ssh, "{host}"])'],
      [
        'cluster.hosts',
        'needs 3 nodes (model.trainer.nodes 1 + model.engine.nodes 2 for 2 engine replicas); the allocation (cluster.hosts: h1) has 1: 2 missing',
      ],
    ]);
  });
});

describe('atk validate on a cluster recipe', () => {
  test('returns ok with the nodes needed outside an allocation, and the placement inside one', async () => {
    vi.stubEnv('SLURM_JOB_ID', '');
    vi.stubEnv('SLURM_JOB_NODELIST', '');
    vi.stubEnv('SLURM_NODELIST', '');
    expect((await runValidate({ recipe: slurmRecipe, overrides: [], resolved: false })).split('\n')[1]).toBe(
      'cluster slurm: not inside an allocation; needs 3 nodes (trainer 1, engines 2)',
    );
    vi.stubEnv('SLURM_JOB_ID', '7');
    vi.stubEnv('SLURM_JOB_NODELIST', 'n[1-3]');
    vi.stubEnv('SLURM_GPUS_ON_NODE', '1');
    expect((await runValidate({ recipe: slurmRecipe, overrides: [], resolved: false })).split('\n')[1]).toBe(
      'cluster slurm: trainer on n1; engine replica 0 on n2, replica 1 on n3',
    );
  });

  test('rejects the recipe inside an allocation that cannot hold it', async () => {
    vi.stubEnv('SLURM_JOB_ID', '7');
    vi.stubEnv('SLURM_JOB_NODELIST', 'n1');
    vi.stubEnv('SLURM_GPUS_ON_NODE', '1');
    const error = await runValidate({ recipe: slurmRecipe, overrides: [], resolved: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/cluster\.launcher: needs 3 nodes .* has 1: 2 missing/);
  });
});
