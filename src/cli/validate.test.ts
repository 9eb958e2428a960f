/**
 * The broken-recipe corpus through the CLI's entry point: each fixture in test/fixtures/bad-recipes
 * must make `atk validate` exit 2 and print exactly these lines (then the hint), with no stack trace.
 * The entry point runs in this process (a fresh Node process per case cost a second each); that the
 * built CLI's process exits 2 with the same first line is test/e2e/cli.test.ts's.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runCliInProcess } from '../__fixtures__/cli-in-process.js';
import { datasets } from '../datasets/index.js';
import { projectRoot } from '../util/paths.js';

const FIXTURES = join(projectRoot(), 'test', 'fixtures', 'bad-recipes');

/** fixture, overrides, expected stderr lines before the hint. */
const CORPUS: readonly (readonly [string, readonly string[], readonly string[]])[] = [
  ['syntax-unclosed-quote.yaml', [], ['syntax-unclosed-quote.yaml:1:7  YAML syntax: double quote is never closed']],
  [
    'syntax-unclosed-bracket.yaml',
    [],
    ["syntax-unclosed-bracket.yaml:5:11  YAML syntax: '[' is never closed with ']'"],
  ],
  ['tabs.yaml', [], ['tabs.yaml:3:1  tab used for indentation; YAML indents with spaces']],
  ['duplicate-key.yaml', [], ["duplicate-key.yaml:4:3  duplicate key 'steps'"]],
  ['two-documents.yaml', [], ['two-documents.yaml:2:1  more than one YAML document (---); a recipe is one document']],
  ['unknown-alias.yaml', [], ['unknown-alias.yaml:2:7  unknown YAML alias *nowhere']],
  ['empty.yaml', [], ['empty.yaml:1:1  empty recipe: expected a mapping with at least name, model and reward']],
  [
    'comments-only.yaml',
    [],
    ['comments-only.yaml:1:1  empty recipe: expected a mapping with at least name, model and reward'],
  ],
  ['top-level-list.yaml', [], ['top-level-list.yaml:1:1  a recipe must be a mapping of keys, not a list']],
  ['a-directory.yaml', [], ['a-directory.yaml:1:1  is a directory, not a recipe file']],
  ['binary.yaml', [], ['binary.yaml:3:10  binary content, not a YAML text file']],
  ['latin1.yaml', [], ['latin1.yaml:3:12  binary content, not a YAML text file']],
  ['no-such-file.yaml', [], ['no-such-file.yaml:1:1  file not found']],
  ['wrong-type-number.yaml', [], ["wrong-type-number.yaml:3:15  algorithm.group_size: expected a number, got 'eight'"]],
  ['wrong-type-section.yaml', [], ['wrong-type-section.yaml:2:10  rollout: expected a mapping, got 5']],
  ['wrong-type-list.yaml', [], ["wrong-type-list.yaml:2:8  tools: expected a list, got 'calculator'"]],
  ['wrong-type-bool.yaml', [], ["wrong-type-bool.yaml:3:16  train.eval_before: expected true or false, got 'yes'"]],
  ['empty-section.yaml', [], ['empty-section.yaml:2:7  train: expected a mapping, got an empty value']],
  ['unknown-key.yaml', [], ["unknown-key.yaml:3:3  algorithm.group_sise: unknown key (did you mean 'group_size'?)"]],
  [
    'unknown-key-no-suggestion.yaml',
    [],
    [
      'unknown-key-no-suggestion.yaml:3:3  train.banana: unknown key; known keys here: steps, tasks_per_step, time_budget_s, eval_every, eval_before, eval_after, save_every, keep_checkpoints, keep_trajectories',
    ],
  ],
  ['misspelled-section.yaml', [], ["misspelled-section.yaml:2:1  algoritm: unknown key (did you mean 'algorithm'?)"]],
  [
    'misspelled-required-section.yaml',
    [],
    [
      'misspelled-required-section.yaml:1:1  model: required key is missing',
      "misspelled-required-section.yaml:2:1  modle: unknown key (did you mean 'model'?)",
    ],
  ],
  ['missing-required.yaml', [], ['missing-required.yaml:1:1  model: required key is missing']],
  [
    'bad-enum.yaml',
    [],
    [
      "bad-enum.yaml:4:11  model.engine.kind: unknown value 'vlm' (did you mean 'vllm'?); one of: embedded, vllm, sglang, url",
    ],
  ],
  ['bad-name.yaml', [], ['bad-name.yaml:2:7  name: must be letters, digits, dot, dash or underscore']],
  [
    'bad-url.yaml',
    [],
    ["bad-url.yaml:5:10  model.engine.url: must be a URL such as http://127.0.0.1:8000, got 'not a url'"],
  ],
  [
    'prompt-bad-form.yaml',
    [],
    [
      'prompt-bad-form.yaml:3:3  agent.system_prompt.file: required key is missing',
      "prompt-bad-form.yaml:3:19  agent.system_prompt.fil: unknown key (did you mean 'file'?)",
    ],
  ],
  ['negative-count.yaml', [], ['negative-count.yaml:3:16  rollout.concurrency: must be > 0, got -4']],
  ['zero-count.yaml', [], ['zero-count.yaml:3:10  train.steps: must be > 0, got 0']],
  ['fractional-count.yaml', [], ['fractional-count.yaml:3:15  algorithm.group_size: expected an integer, got 2.5']],
  ['out-of-range.yaml', [], ['out-of-range.yaml:3:10  rollout.top_p: must be <= 1, got 1.5']],
  ['extends-missing.yaml', [], ['extends-missing.yaml:1:10  extends: base recipe not found: bases/nope.yaml']],
  ['extends-directory.yaml', [], ['extends-directory.yaml:1:10  extends: base recipe is a directory: bases']],
  [
    'extends-self.yaml',
    [],
    ['extends-self.yaml:1:10  extends: circular extends: extends-self.yaml -> extends-self.yaml'],
  ],
  [
    'extends-circular.yaml',
    [],
    ['bases/loop-b.yaml:1:10  extends: circular extends: bases/loop-a.yaml -> bases/loop-b.yaml -> bases/loop-a.yaml'],
  ],
  [
    'extends-bad-base.yaml',
    [],
    ["bases/bad-base.yaml:3:3  rollout.temprature: unknown key (did you mean 'temperature'?)"],
  ],
  [
    'reward-name-and-components.yaml',
    [],
    ['reward-name-and-components.yaml:4:5  reward.components: give only one of name, components for the reward'],
  ],
  ['unknown-dataset.yaml', [], [`unknown-dataset.yaml:3:9  dataset.name: ${datasets.unknownMessage('gsm8')}`]],
  ['custom-missing-module.yaml', [], ['custom-missing-module.yaml:3:13  tools.0.module: no such module']],
  [
    'custom-missing-export.yaml',
    [],
    ["custom-missing-export.yaml:4:13  tools.0.export: no export 'lookupOrder'; it exports helper"],
  ],
  [
    'custom-mcp-not-found.yaml',
    [],
    ['custom-mcp-not-found.yaml:4:16  tools.0.mcp.command: ./custom/no-such-server is not an executable file'],
  ],
  [
    'custom-reward-export-not-function.yaml',
    [],
    ["custom-reward-export-not-function.yaml:8:11  reward.export: export 'grade' is number, not a function"],
  ],
  [
    'custom-reward-not-executable.yaml',
    [],
    ['custom-reward-not-executable.yaml:7:13  reward.command.0: ./custom/tasks.jsonl is not an executable file'],
  ],
  [
    'custom-reward-command-not-found.yaml',
    [],
    [
      "custom-reward-command-not-found.yaml:9:17  reward.components.1.command.0: command 'no-such-grader-atk' is not on $PATH",
    ],
  ],
  [
    'custom-missing-column.yaml',
    [],
    ["custom-missing-column.yaml:7:13  dataset.fields.answer: column 'answer' is missing in custom/tasks.jsonl row 2"],
  ],
  [
    'option-reward-tau2-domain.yaml',
    [],
    [
      "option-reward-tau2-domain.yaml:8:21  reward.options.domain: must be one of: airline, retail, helpdesk; got 'telecom'",
    ],
  ],
  [
    'option-reward-tau2-judge.yaml',
    [],
    [
      "option-reward-tau2-judge.yaml:7:12  reward.options.judge.url: must be a URL such as http://127.0.0.1:8000, got 'judge-server'",
    ],
  ],
  [
    'option-reward-component.yaml',
    [],
    [
      "option-reward-component.yaml:15:9  reward.components.1.options.tolerence: unknown key (did you mean 'tolerance'?)",
    ],
  ],
  [
    'option-dataset-arith.yaml',
    [],
    ['option-dataset-arith.yaml:5:17  dataset.options.max_digits: must be >= 1, got 0'],
  ],
  [
    'option-tool-run-python.yaml',
    [],
    ['option-tool-run-python.yaml:5:26  tools.1.options.timeout_s: must be > 0, got -1'],
  ],
  [
    'overridable.yaml',
    ['reward.options.fallback_last_numbr=false', 'dataset.options.train_size=0'],
    [
      "<overrides>:1:16  reward.options.fallback_last_numbr: unknown key (did you mean 'fallback_last_number'?)",
      '<overrides>:2:28  dataset.options.train_size: must be > 0, got 0',
    ],
  ],
  ['overridable.yaml', ['train.stepz=5'], ["<overrides>:1:7  train.stepz: unknown key (did you mean 'train.steps'?)"]],
  ['overridable.yaml', ['algoritm.name=rloo'], ["<overrides>:1:1  algoritm: unknown key (did you mean 'algorithm'?)"]],
  [
    'overridable.yaml',
    ['train.steps'],
    ["<overrides>:1:1  bad override 'train.steps': expected key.path=value, e.g. train.steps=10"],
  ],
  ['overridable.yaml', ['=5'], ["<overrides>:1:1  bad override '=5': expected key.path=value, e.g. train.steps=10"]],
  [
    'overridable.yaml',
    ['model.engine.gpus=[0'],
    ["<overrides>:1:19  model.engine.gpus: bad override value: YAML syntax: '[' is never closed with ']'"],
  ],
  ['overridable.yaml', ['train.steps=ten'], ["<overrides>:1:13  train.steps: expected a number, got 'ten'"]],
  [
    'overridable.yaml',
    ['model.engine.prefix_cache_tokens=-5'],
    ['<overrides>:1:34  model.engine.prefix_cache_tokens: must be >= 0, got -5'],
  ],
  [
    'overridable.yaml',
    ['model.engine.kind=url', 'model.engine.url=http://127.0.0.1:9', 'model.engine.prefix_cache_tokens=4096'],
    [
      "<overrides>:3:34  model.engine.prefix_cache_tokens: sizes the embedded engine's prefix cache; the server at model.engine.url keeps its own",
    ],
  ],
  ['overridable.yaml', ['seed=1', 'train.steps=-3'], ['<overrides>:2:13  train.steps: must be > 0, got -3']],
  [
    'overridable.yaml',
    ['tools.1.name=calculator'],
    ['<overrides>:1:1  tools.1.name: index 1 is past the end of tools (0 items)'],
  ],
];

describe('atk validate on broken recipes', () => {
  test('returns a corpus of at least 25 distinct broken files', () => {
    expect(new Set(CORPUS.map(([file]) => file)).size).toBeGreaterThanOrEqual(25);
    const onDisk = readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml'));
    expect(onDisk.filter((f) => !CORPUS.some(([file]) => file === f))).toStrictEqual([]);
  });

  // One case at a time: each changes the process's working directory and reads its exit code.
  test.each(CORPUS.map((entry, index) => [entry[0], entry[1].join(' '), index] as const))(
    'rejects %s %s with its exact lines and exit code 2',
    async (file, _args, index) => {
      const outcome = await runCliInProcess(['validate', file, ...CORPUS[index]![1]], FIXTURES);
      const lines = outcome.stderr.split('\n').filter(Boolean);
      expect({ exitCode: outcome.exitCode, stdout: outcome.stdout, lines: lines.slice(0, -1) }).toStrictEqual({
        exitCode: 2,
        stdout: '',
        lines: [...CORPUS[index]![2]],
      });
      expect(lines.at(-1)).toMatch(/^hint: /);
      expect(outcome.stderr).not.toMatch(/\n\s+at |internal error/);
    },
  );
});
