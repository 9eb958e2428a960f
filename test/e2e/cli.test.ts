/**
 * The built CLI through execa: exit code and first stderr line for each error class, and the
 * commands of the foundation working end to end.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { createRunDir } from '../../src/runs/index.js';
import { projectRoot } from '../../src/util/paths.js';

const BIN = join(projectRoot(), 'bin', 'atk');
const FIXTURES = join(projectRoot(), 'test', 'fixtures', 'bad-recipes');

function atk(
  args: readonly string[],
  cwd = projectRoot(),
): Promise<{ exitCode: number | undefined; stdout: string; stderr: string }> {
  return execa('node', [BIN, ...args], { cwd, reject: false }).then((r) => ({
    exitCode: r.exitCode,
    stdout: String(r.stdout),
    stderr: String(r.stderr),
  }));
}

const firstLine = (text: string): string => text.split('\n')[0]!;

test('returns the package version for atk --version', async () => {
  const result = await atk(['--version']);
  const { version } = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
  expect([result.exitCode, result.stdout, result.stderr]).toStrictEqual([0, version, '']); // execa strips the final newline
});

describe('atk error classes', () => {
  test('rejects a bad recipe (ConfigError) with exit code 2 and a located first line', async () => {
    const result = await atk(['validate', 'zero-count.yaml'], FIXTURES);
    expect([result.exitCode, firstLine(result.stderr)]).toStrictEqual([
      2,
      'zero-count.yaml:3:10  train.steps: must be > 0, got 0',
    ]);
  });

  test('rejects bad input (InputError) with exit code 2 and the nearest name', async () => {
    const runs = mkdtempSync(join(tmpdir(), 'atk-e2e-runs-'));
    await createRunDir({ runsDir: runs, name: 'quickstart', recipeText: '', resolvedYaml: '', seed: 0 });
    const result = await atk(['runs', 'show', 'quickstrat', '--runs-dir', runs]);
    expect([result.exitCode, firstLine(result.stderr)]).toStrictEqual([
      2,
      `no run 'quickstrat' in ${runs} (did you mean 'quickstart'?)`,
    ]);
  });

  test('rejects a run whose model files are missing before it makes a run directory', async () => {
    const runs = mkdtempSync(join(tmpdir(), 'atk-e2e-runs-'));
    try {
      // Beside the runs directory, not in it: a path there that names nothing reads as a run that was never made.
      const missing = `${runs}-no-model`;
      const result = await atk(['run', 'recipes/quickstart.yaml', `model.path=${missing}`, `output.runs_dir=${runs}`]);
      expect([result.exitCode, firstLine(result.stderr), existsSync(join(runs, 'quickstart'))]).toStrictEqual([
        1,
        `model.path: no config.json in ${missing}`,
        false,
      ]);
    } finally {
      rmSync(runs, { recursive: true, force: true });
    }
  });

  test('rejects a run whose engine cannot be started before it makes a run directory', async () => {
    const runs = mkdtempSync(join(tmpdir(), 'atk-e2e-runs-'));
    try {
      const missing = join(runs, 'no-vllm');
      const engine = ['model.engine.kind=vllm', `model.engine.command=[${missing}, serve]`];
      const result = await atk(['run', 'recipes/quickstart.yaml', ...engine, `output.runs_dir=${runs}`]);
      expect([result.exitCode, firstLine(result.stderr), existsSync(join(runs, 'quickstart'))]).toStrictEqual([
        2,
        `vllm: cannot start the vllm engine: no executable ${missing}`,
        false,
      ]);
    } finally {
      rmSync(runs, { recursive: true, force: true });
    }
  });

  test('rejects a bad command line (usage error) with exit code 2 and no stack', async () => {
    const result = await atk(['valdate', 'x.yaml']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/Did you mean validate\?/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  test("rejects a command line a command's check refuses (atk run with nothing to run) as a usage error", async () => {
    const result = await atk(['run']);
    expect([result.exitCode, result.stderr]).toStrictEqual([
      2,
      'name a recipe, or --resume a run directory\nhint: see atk --help',
    ]);
  });
});

describe('atk commands', () => {
  test('returns ok for a valid recipe and the resolved recipe with --resolved', async () => {
    const ok = await atk(['validate', 'recipes/quickstart.yaml']);
    expect([ok.exitCode, ok.stdout]).toStrictEqual([
      0,
      'recipes/quickstart.yaml: ok (quickstart: grpo, 8 steps x 16 tasks x 8 episodes, engine embedded, tool calls hermes)',
    ]);
    const resolved = await atk(['validate', 'recipes/quickstart.yaml', 'algorithm.name=rloo', '--resolved']);
    const recipe = parse(resolved.stdout) as {
      algorithm: Record<string, unknown>;
      model: { path: string };
      agent: { tool_call_format: string };
    };
    // agent.tool_call_format: auto is read off the tiny model's chat template.
    expect([
      recipe.algorithm.baseline,
      recipe.algorithm.std_normalize,
      recipe.model.path,
      recipe.agent.tool_call_format,
    ]).toStrictEqual(['leave_one_out', false, join(projectRoot(), 'models', 'tiny-arith'), 'hermes']);
  });

  test('returns a JSON Schema from atk schema that names every section', async () => {
    const result = await atk(['schema']);
    const schema = JSON.parse(result.stdout) as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining([
        'name',
        'model',
        'dataset',
        'tools',
        'agent',
        'reward',
        'algorithm',
        'rollout',
        'train',
        'output',
        'seed',
      ]),
    );
    expect(schema.required).toStrictEqual(['name', 'model', 'reward']);
  });

  test('returns a starter from atk init that validates, and refuses to overwrite it without --force', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-e2e-init-'));
    const first = await atk(['init', '--example', 'quickstart'], dir);
    expect(first.exitCode).toBe(0);
    expect(firstLine(readFileSync(join(dir, 'quickstart.yaml'), 'utf8'))).toBe(
      '# yaml-language-server: $schema=./recipe.schema.json',
    );
    expect((await atk(['validate', 'quickstart.yaml'], dir)).exitCode).toBe(0);
    writeFileSync(join(dir, 'quickstart.yaml'), 'name: mine\n');
    const again = await atk(['init'], dir);
    expect([again.exitCode, firstLine(again.stderr)]).toStrictEqual([
      2,
      `${join(dir, 'quickstart.yaml')} already exists; not overwriting it`,
    ]);
    expect(readFileSync(join(dir, 'quickstart.yaml'), 'utf8')).toBe('name: mine\n');
    expect((await atk(['init', '--force'], dir)).exitCode).toBe(0);
  });

  test('returns a plain runs table when stdout is not a terminal', async () => {
    const runs = mkdtempSync(join(tmpdir(), 'atk-e2e-runs-'));
    const run = await createRunDir({
      runsDir: runs,
      name: 'quickstart',
      recipeText: '',
      resolvedYaml: 'train:\n  steps: 10\n',
      seed: 0,
    });
    await run.appendMetrics({ kind: 'train', step: 1, reward_mean: 0.125 });
    await run.setStatus('finished');
    const result = await atk(['runs', 'ls', '--runs-dir', runs]);
    const [head, row] = result.stdout.split('\n');
    expect(head!.split(/\s{2,}/)).toStrictEqual([
      'name',
      'version',
      'status',
      'steps',
      'last reward',
      'started',
      'duration',
    ]);
    expect(row!.split(/\s{2,}/).slice(0, 5)).toStrictEqual(['quickstart', 'v001', 'finished', '1/10', '0.125']);
  });

  test.each(['validate', 'init', 'schema', 'runs', 'runs ls', 'runs show', 'doctor'])(
    'returns --help with an example for atk %s',
    async (command) => {
      const result = await atk([...command.split(' '), '--help']);
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toMatch(/\nExamples:\n {2}# .+\n {2}atk /);
    },
  );
});
