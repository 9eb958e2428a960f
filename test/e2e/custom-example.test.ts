/**
 * Bring your own task, end to end through the built CLI: `atk init --example custom` writes the
 * starter (tasks.jsonl, tools.ts, grade.ts, custom.yaml), and `atk run`, `atk run --resume` and
 * `atk eval` on it train and score with the embedded engine, the tool module and the reward module.
 * The run goes through a recipe in another directory that only extends the starter, so the modules
 * and data file are found beside the file that names them, in the run and when it is reopened.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { atkRun, BIN, onlyRun, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

const atk = (args: readonly string[], cwd: string) =>
  execa('node', [BIN, ...args], { reject: false, cwd, env: { CI: 'true' } });

describe('atk init --example custom', () => {
  it('returns a starter that validates, runs, resumes and evaluates with its own tool and reward', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'atk-e2e-custom-'));
    const init = await atk(['init', '--example', 'custom', 'mine'], cwd);
    expect(init.exitCode).toBe(0);
    expect(readdirSync(join(cwd, 'mine')).sort()).toStrictEqual([
      'custom.yaml',
      'grade.ts',
      'recipe.schema.json',
      'tasks.jsonl',
      'tools.ts',
    ]);
    expect((await atk(['validate', 'mine/custom.yaml'], cwd)).exitCode).toBe(0);
    const recipe = join(cwd, 'top.yaml');
    writeFileSync(recipe, 'extends: mine/custom.yaml\n');
    const validated = await atk(['validate', 'top.yaml'], cwd);
    expect([validated.exitCode, validated.stderr]).toStrictEqual([0, '']);

    const runsDir = tempRunsDir();
    const result = await atkRun([recipe, 'train.steps=1', 'train.eval_after=false'], runsDir, 60_000);
    expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    const dir = onlyRun(runsDir, 'custom');
    expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
    for (const file of [
      'recipe.yaml',
      'resolved.yaml',
      'summary.json',
      'logs/trainer.log',
      'checkpoints/step-00001/model.safetensors',
      'eval/step-00000/summary.json',
    ]) {
      expect(existsSync(join(dir, file)), file).toBe(true);
    }
    expect(readFileSync(join(dir, 'resolved.yaml'), 'utf8')).toContain(`module: ${join(cwd, 'mine', 'tools.ts')}\n`);
    const train = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
    expect(train.map((l) => l.step)).toStrictEqual([1]);
    // The reward module's named parts are logged separately, and the tool module's calculator ran.
    expect(Object.keys(train[0]!)).toEqual(expect.arrayContaining(['reward/correct', 'reward/used_calculator']));
    const episodes = readJsonl(join(dir, 'trajectories', 'step-00001.jsonl'));
    expect(episodes).toHaveLength(16);
    for (const episode of episodes)
      expect(Object.keys(episode.reward_parts as object).sort()).toStrictEqual(['correct', 'used_calculator']);
    expect(episodes.some((e) => (e.stats as { toolCalls: number }).toolCalls > 0)).toBe(true);

    // Resumed and evaluated from the run directory, the modules still resolve beside the starter.
    const resumed = await execa('node', [BIN, 'run', '--resume', dir, 'train.steps=2'], {
      reject: false,
      env: { CI: 'true' },
      timeout: 60_000,
    });
    expect([resumed.exitCode, resumed.stderr]).toStrictEqual([0, '']);
    expect(
      readJsonl(join(dir, 'metrics.jsonl'))
        .filter((l) => l.kind === 'train')
        .map((l) => l.step),
    ).toStrictEqual([1, 2]);
    const summary = readJson(join(dir, 'summary.json')) as {
      status: string;
      last_step: { step: number };
      evals: Record<string, unknown>;
    };
    expect([summary.status, summary.last_step.step, Object.keys(summary.evals)]).toStrictEqual([
      'finished',
      2,
      ['step-00000'],
    ]);

    const evaluated = await atk(['eval', dir, '--checkpoint', 'latest'], cwd);
    expect([evaluated.exitCode, evaluated.stderr]).toStrictEqual([0, '']);
    expect(readJsonl(join(dir, 'eval', 'step-00002', 'results.jsonl'))).toHaveLength(1);
  }, 180_000);
});
