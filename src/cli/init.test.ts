import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { loadRecipe } from '../recipe/index.js';
import { projectRoot } from '../util/paths.js';
import { exampleNames, runInit, STARTERS } from './init.js';

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'atk-init-'));

describe('runInit', () => {
  test('returns the starters: quickstart, gsm8k, deepcoder, tau2, external and the custom folder', () => {
    expect(exampleNames()).toStrictEqual(['custom', 'deepcoder', 'external', 'gsm8k', 'quickstart', 'tau2']);
  });

  test.each(['quickstart', 'gsm8k', 'deepcoder', 'tau2'])(
    'returns a %s recipe that validates, with the schema beside it',
    async (example) => {
      const dir = tempDir();
      const { recipePath, schemaPath } = await runInit({ example, path: dir, force: false });
      expect(recipePath).toBe(join(dir, `${example}.yaml`));
      const head = readFileSync(recipePath, 'utf8').split('\n');
      expect(head[0]).toBe('# yaml-language-server: $schema=./recipe.schema.json');
      expect(head.filter((line) => /^# (npx )?atk run /.test(line))).toStrictEqual([`# atk run ${example}.yaml`]);
      expect(JSON.parse(readFileSync(schemaPath, 'utf8')).title).toBe('atk recipe');
      expect((await loadRecipe(recipePath)).recipe.name).toBeTruthy();
    },
  );

  test.each(['quickstart', 'gsm8k', 'deepcoder', 'tau2', 'external'])(
    'returns the %s starter as its shipped recipe, which it is generated from, once both are loaded',
    async (example) => {
      const starter = STARTERS[example]!;
      if (!('recipe' in starter)) throw new Error(`${example} is not generated from a shipped recipe`);
      const { recipePath } = await runInit({ example, path: join(tempDir(), example), force: false });
      const written = (await loadRecipe(recipePath)).recipe;
      const shipped = (await loadRecipe(join(projectRoot(), starter.recipe))).recipe;
      // The one documented difference: external's agent is copied beside the starter.
      const external = { command: ['python3', 'agent.py'] };
      expect(written).toStrictEqual(
        example === 'external'
          ? { ...shipped, agent: { ...shipped.agent, external: { ...shipped.agent.external, ...external } } }
          : shipped,
      );
    },
  );

  test('returns the quickstart starter with the shipped 8-step quickstart schedule', async () => {
    const { recipePath } = await runInit({ example: 'quickstart', path: tempDir(), force: false });
    const { train, algorithm } = (await loadRecipe(recipePath)).recipe;
    expect([train.steps, train.eval_every, train.save_every, algorithm.lr_schedule]).toStrictEqual([8, 0, 0, 'cosine']);
  });

  test('returns the custom starter copied whole into its own directory', async () => {
    const cwd = tempDir();
    const { recipePath, companions } = await runInit({ example: 'custom', path: join(cwd, 'mine'), force: false });
    expect(recipePath).toBe(join(cwd, 'mine', 'custom.yaml'));
    expect(readdirSync(join(cwd, 'mine')).sort()).toStrictEqual(
      ['custom.yaml', ...companions.map((p) => p.slice(join(cwd, 'mine').length + 1)), 'recipe.schema.json'].sort(),
    );
    expect((await loadRecipe(recipePath)).recipe.name).toBeTruthy();
  });

  test.each(['quickstart', 'custom'])(
    'returns a %s recipe inside a new directory for a path without .yaml, the schema with it',
    async (example) => {
      const cwd = tempDir();
      const { recipePath, schemaPath } = await runInit({ example, path: join(cwd, 'my-experiment'), force: false });
      expect([recipePath, schemaPath]).toStrictEqual([
        join(cwd, 'my-experiment', `${example}.yaml`),
        join(cwd, 'my-experiment', 'recipe.schema.json'),
      ]);
      expect(readdirSync(cwd)).toStrictEqual(['my-experiment']);
      expect((await loadRecipe(recipePath)).recipe.name).toBeTruthy();
    },
  );

  test('rejects an existing recipe without force and overwrites it with force', async () => {
    const dir = tempDir();
    const path = join(dir, 'r.yaml');
    writeFileSync(path, 'name: mine\n');
    await expect(runInit({ example: 'quickstart', path, force: false })).rejects.toThrow(
      `${path} already exists; not overwriting it`,
    );
    expect(readFileSync(path, 'utf8')).toBe('name: mine\n');
    await runInit({ example: 'quickstart', path, force: true });
    expect(readFileSync(path, 'utf8')).toMatch(/^# yaml-language-server/);
  });

  test('rejects a foreign recipe.schema.json, but rewrites its own', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'recipe.schema.json'), '{"title": "something else"}');
    await expect(runInit({ example: 'gsm8k', path: join(dir, 'a.yaml'), force: false })).rejects.toThrow(
      /is not an atk recipe schema/,
    );
    mkdirSync(join(dir, 'ours'));
    await runInit({ example: 'gsm8k', path: join(dir, 'ours', 'a.yaml'), force: false });
    await runInit({ example: 'tau2', path: join(dir, 'ours', 'b.yaml'), force: false });
    expect(readdirSync(join(dir, 'ours')).sort()).toStrictEqual(['a.yaml', 'b.yaml', 'recipe.schema.json']);
  });

  test('rejects an unknown example with the nearest name', async () => {
    const error = await runInit({ example: 'quikstart', force: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(
      /^unknown example 'quikstart' \(did you mean 'quickstart'\?\); examples: /,
    );
  });
});
