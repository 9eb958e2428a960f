import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { addRecipeCheck, loadRecipe, resolvedYaml } from './index.js';

/** A fresh directory with the given files. */
function files(tree: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'atk-recipe-'));
  for (const [name, text] of Object.entries(tree)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const VALID =
  'name: base\nmodel:\n  path: Qwen/Qwen3-0.6B\ntools:\n  - name: calculator\nreward:\n  name: math_answer\n';
/** VALID with a dataset: without one the default file dataset has no data file, which the checks refuse. */
const WITH_DATA = `${VALID}dataset:\n  name: arith\n`;

async function problems(file: string, overrides: string[] = []): Promise<string[]> {
  const error = await loadRecipe(file, overrides).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).message.split('\n');
}

describe('loadRecipe', () => {
  test('returns the resolved recipe with defaults, preset settings and the source text', async () => {
    const dir = files({ 'r.yaml': `${WITH_DATA}algorithm:\n  name: rloo\n` });
    const loaded = await loadRecipe(join(dir, 'r.yaml'));
    expect(loaded.file).toBe(join(dir, 'r.yaml'));
    expect(loaded.dir).toBe(dir);
    expect(loaded.sourceText).toBe(`${WITH_DATA}algorithm:\n  name: rloo\n`);
    expect(loaded.recipe.algorithm).toMatchObject({
      name: 'rloo',
      group_size: 8,
      baseline: 'leave_one_out',
      std_normalize: false,
    });
    expect(loaded.recipe.train.steps).toBe(100);
    expect(loaded.recipe.model.path).toBe('Qwen/Qwen3-0.6B');
    expect('extends' in loaded.recipe).toBe(false);
  });

  test('returns a deep merge of extends: maps merge, lists replace, the including file wins', async () => {
    const dir = files({
      'base/base.yaml':
        'name: base\nmodel:\n  path: Qwen/Qwen3-0.6B\n  engine:\n    kind: sglang\n    gpus: [0, 1]\n    startup_timeout_s: 60\ntools:\n  - name: calculator\nreward:\n  name: math_answer\ndataset:\n  name: arith\n',
      'top.yaml': 'extends: base/base.yaml\nname: top\nmodel:\n  engine:\n    gpus: [3]\ntools: []\n',
    });
    const { recipe } = await loadRecipe(join(dir, 'top.yaml'));
    expect({
      name: recipe.name,
      engine: [recipe.model.engine.kind, recipe.model.engine.gpus, recipe.model.engine.startup_timeout_s],
      tools: recipe.tools,
    }).toStrictEqual({
      name: 'top',
      engine: ['sglang', [3], 60],
      tools: [],
    });
  });

  test('returns an inherited key removed by null, its default in its place, and resolved.yaml without it', async () => {
    const dir = files({
      'base.yaml': `${VALID}dataset:\n  name: arith\n  options:\n    max_digits: 4\n  eval_limit: 50\nrollout:\n  request_timeout_s: 30\n`,
      'top.yaml': 'extends: base.yaml\nname: top\ndataset:\n  options: null\nrollout:\n  request_timeout_s: ~\n',
    });
    const { recipe } = await loadRecipe(join(dir, 'top.yaml'));
    expect([recipe.dataset.options, recipe.dataset.eval_limit, recipe.rollout.request_timeout_s]).toStrictEqual([
      {},
      50,
      'auto',
    ]);
    const yaml = resolvedYaml(recipe);
    expect(yaml).not.toContain('max_digits');
    expect(yaml).toMatch(/\n {2}request_timeout_s: auto\n/);
  });

  test('returns tool and reward modules, a reward command path, its cwd and an MCP cwd resolved against the base recipe that names them', async () => {
    const tool =
      "export const lookup = { name: 'lookup', description: 'd', toolSpec: { name: 'lookup', description: 'd', inputSchema: { type: 'object' } }, async *stream() {} };\n";
    const dir = files({
      'shared/base.yaml': [
        'name: base',
        'model: {path: Qwen/Qwen3-0.6B}',
        'dataset: {name: arith}',
        'tools:',
        '  - {module: ./tools.mjs, export: lookup}',
        '  - {mcp: {command: node, args: [server.mjs]}}',
        'reward:',
        '  components:',
        '    - {module: ./grade.mjs}',
        '    - {command: [./grade.sh, --strict]}',
        '    - {command: [python3, grade.py]}',
        '',
      ].join('\n'),
      'shared/tools.mjs': tool,
      'shared/grade.mjs': 'export default () => 1;\n',
      'shared/grade.sh': '#!/bin/sh\necho 1\n',
      'exp/top.yaml': 'extends: ../shared/base.yaml\nname: top\n',
    });
    chmodSync(join(dir, 'shared', 'grade.sh'), 0o755);
    const { recipe } = await loadRecipe(join(dir, 'exp', 'top.yaml'));
    const shared = join(dir, 'shared');
    expect(recipe.tools.map((t) => t.module ?? t.mcp)).toStrictEqual([
      join(shared, 'tools.mjs'),
      { command: 'node', args: ['server.mjs'], cwd: shared },
    ]);
    expect(recipe.reward.components!.map((c) => c.module ?? c.command)).toStrictEqual([
      join(shared, 'grade.mjs'),
      [join(shared, 'grade.sh'), '--strict'],
      ['python3', 'grade.py'],
    ]);
    // Commands run in the base recipe's folder, so `grade.py` is the one beside base.yaml.
    expect(recipe.reward.components!.map((c) => c.cwd)).toStrictEqual([undefined, shared, shared]);
  });

  test('returns no mismatch correction by default, token TIS at 2 when max_staleness > 0, tis_cap as its older spelling, and a given mismatch with its bounds filled in', async () => {
    const dir = files({
      'sync.yaml': WITH_DATA,
      'async.yaml': `${WITH_DATA}rollout:\n  max_staleness: 2\n`,
      'capped.yaml': `${WITH_DATA}rollout:\n  max_staleness: 1\nalgorithm:\n  tis_cap: 5\n`,
      'masked.yaml': `${WITH_DATA}rollout:\n  max_staleness: 1\nalgorithm:\n  mismatch: {mode: mask, level: sequence}\n`,
      'bad.yaml': `${WITH_DATA}rollout:\n  max_staleness: -1\n`,
      'both.yaml': `${WITH_DATA}algorithm:\n  tis_cap: 2\n  mismatch: {mode: tis}\n`,
    });
    const names = ['sync', 'async', 'capped', 'masked'];
    const loaded = await Promise.all(names.map((n) => loadRecipe(join(dir, `${n}.yaml`))));
    expect(loaded.map(({ recipe }) => [recipe.rollout.max_staleness, recipe.algorithm.mismatch])).toStrictEqual([
      [0, undefined],
      [2, { mode: 'tis', level: 'token', low: 0, high: 2, masked_tokens: 'count', trust_region: true }],
      [1, { mode: 'tis', level: 'token', low: 0, high: 5, masked_tokens: 'count', trust_region: true }],
      [1, { mode: 'mask', level: 'sequence', low: 0.5, high: 2, masked_tokens: 'count', trust_region: false }],
    ]);
    expect(loaded.map(({ recipe }) => recipe.algorithm.tis_cap)).toStrictEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(await problems(join(dir, 'bad.yaml'))).toStrictEqual([
      `${join(dir, 'bad.yaml')}:11:18  rollout.max_staleness: must be >= 0, got -1`,
    ]);
    expect(await problems(join(dir, 'both.yaml'))).toStrictEqual([
      `${join(dir, 'both.yaml')}:11:12  algorithm.tis_cap: give mismatch or tis_cap, not both (tis_cap C is mismatch {mode: tis, level: token, low: 0, high: C})`,
    ]);
  });

  test('rejects a value inherited through extends at its line in the base file', async () => {
    const dir = files({
      'b.yaml': `${WITH_DATA}rollout:\n  top_p: 2\n`,
      'sub/top.yaml': 'extends: ../b.yaml\nname: top\n',
    });
    const lines = await problems(join(dir, 'sub', 'top.yaml'));
    // A base file is named relative to the working directory when that is shorter, so the name
    // depends on where the clone sits; what must hold is that it names b.yaml, at its line.
    const [named, ...rest] = lines.map((l) => /^(.*):(\d+:\d+ {2}.*)$/.exec(l)?.slice(1) ?? [l]);
    expect([resolve(named![0]!), named![1], rest]).toStrictEqual([
      join(dir, 'b.yaml'),
      '11:10  rollout.top_p: must be <= 1, got 2',
      [],
    ]);
  });

  test('rejects a chain of three files that loops back, naming the cycle', async () => {
    const dir = files({
      'a.yaml': 'extends: b.yaml\n',
      'b.yaml': 'extends: c.yaml\n',
      'c.yaml': 'name: c\nextends: a.yaml\n',
    });
    const lines = await problems(join(dir, 'a.yaml'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /c\.yaml:2:10 {2}extends: circular extends: .*a\.yaml -> .*b\.yaml -> .*c\.yaml -> .*a\.yaml$/,
    );
  });

  test('returns overrides parsed as YAML scalars and flow collections', async () => {
    const dir = files({ 'r.yaml': WITH_DATA });
    const { recipe } = await loadRecipe(join(dir, 'r.yaml'), [
      'train.steps=7',
      'algorithm.learning_rate=2e-4',
      'agent.chat_template_kwargs={enable_thinking: false, n: [1, 2]}',
      'train.eval_before=false',
      'name="x1"',
      'tools.0.options.max_length=9',
    ]);
    expect([
      recipe.train.steps,
      recipe.algorithm.learning_rate,
      recipe.agent.chat_template_kwargs,
      recipe.train.eval_before,
      recipe.name,
      recipe.tools[0]!.options,
    ]).toStrictEqual([7, 2e-4, { enable_thinking: false, n: [1, 2] }, false, 'x1', { max_length: 9 }]);
  });

  test('rejects every bad override at once, located by argument number and column', async () => {
    const dir = files({ 'r.yaml': WITH_DATA });
    const lines = await problems(join(dir, 'r.yaml'), [
      'train.stepz=3',
      'seed=-1',
      'oops',
      'tools.5.name=x',
      'extends=a.yaml',
    ]);
    expect(lines).toStrictEqual([
      "<overrides>:1:7  train.stepz: unknown key (did you mean 'train.steps'?)",
      '<overrides>:2:6  seed: must be >= 0, got -1',
      "<overrides>:3:1  bad override 'oops': expected key.path=value, e.g. train.steps=10",
      '<overrides>:4:1  tools.5.name: index 5 is past the end of tools (1 items)',
      '<overrides>:5:1  extends: extends cannot be overridden; write it in the recipe',
    ]);
  });

  test('rejects file problems and override problems together, file first', async () => {
    const dir = files({ 'r.yaml': `${VALID}train:\n  steps: 0\n` });
    const lines = await problems(join(dir, 'r.yaml'), ['rollout.concurrency=0']);
    expect(lines).toStrictEqual([
      `${join(dir, 'r.yaml')}:9:10  train.steps: must be > 0, got 0`,
      '<overrides>:1:21  rollout.concurrency: must be > 0, got 0',
    ]);
  });

  test('returns paths resolved against the file that wrote them; hub ids stay as written', async () => {
    const dir = files({
      'shared/base.yaml': `${VALID}dataset:\n  name: file\n  path: data/train.jsonl\n`,
      'shared/data/train.jsonl': '{"prompt": "1 + 1?"}\n',
      'exp/top.yaml':
        'extends: ../shared/base.yaml\nagent:\n  system_prompt: {file: prompt.txt}\nmodel:\n  path: models/tiny-arith\n',
    });
    const { recipe } = await loadRecipe(join(dir, 'exp', 'top.yaml'), ['model.chat_template=t.jinja']);
    expect([
      recipe.dataset.path,
      recipe.agent.system_prompt,
      recipe.model.path,
      recipe.model.chat_template,
    ]).toStrictEqual([
      join(dir, 'shared', 'data', 'train.jsonl'),
      { file: join(dir, 'exp', 'prompt.txt') },
      join(projectRoot(), 'models', 'tiny-arith'),
      join(process.cwd(), 't.jinja'),
    ]);
  });

  test('rejects unregistered component names with the nearest registered one', async () => {
    const dir = files({ 'r.yaml': WITH_DATA.replace('name: calculator', 'name: calculater') });
    const lines = await problems(join(dir, 'r.yaml'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^${join(dir, 'r.yaml')}:5:11 {2}tools\\.0\\.name: unknown tool 'calculater' \\(did you mean 'calculator'\\?\\); known: `,
      ),
    );
  });

  test('rejects what an added check reports, located at the key it names', async () => {
    addRecipeCheck((recipe) => (recipe.seed === 4242 ? [{ path: 'seed', message: 'seed 4242 is reserved' }] : []));
    const dir = files({ 'r.yaml': `${WITH_DATA}seed: 4242\n` });
    expect(await problems(join(dir, 'r.yaml'))).toStrictEqual([
      `${join(dir, 'r.yaml')}:10:7  seed: seed 4242 is reserved`,
    ]);
  });

  test("rejects registered components' options with each component's own schema, all at once, at their keys", async () => {
    const text =
      'name: base\nmodel:\n  path: Qwen/Qwen3-0.6B\ndataset:\n  name: arith\n  options: {max_digits: 0}\ntools:\n  - name: calculator\n    options: {max_lenght: 9}\nreward:\n  components:\n    - name: math_answer\n    - name: tau2\n      options: {domain: telecom}\n';
    const dir = files({ 'r.yaml': text });
    expect(await problems(join(dir, 'r.yaml'))).toStrictEqual([
      `${join(dir, 'r.yaml')}:6:25  dataset.options.max_digits: must be >= 1, got 0`,
      `${join(dir, 'r.yaml')}:9:15  tools.0.options.max_lenght: unknown key (did you mean 'max_length'?)`,
      `${join(dir, 'r.yaml')}:14:25  reward.components.1.options.domain: must be one of: airline, retail, helpdesk; got 'telecom'`,
    ]);
  });

  test('returns a relocate that moves component issues from <recipe> to their line', async () => {
    const dir = files({ 'r.yaml': `${VALID}dataset:\n  name: arith\n  options:\n    max_digits: 9\n` });
    const loaded = await loadRecipe(join(dir, 'r.yaml'));
    const moved = loaded.relocate(
      new ConfigError([
        { file: '<recipe>', line: 1, col: 1, path: 'dataset.options.max_digits', message: 'must be <= 12' },
      ]),
    );
    expect(moved.message).toBe(`${join(dir, 'r.yaml')}:11:17  dataset.options.max_digits: must be <= 12`);
  });
});
