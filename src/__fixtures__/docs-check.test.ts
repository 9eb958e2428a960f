import { describe, expect, test } from 'vitest';
import {
  commandLinesOf,
  helpCommands,
  parsesStrictly,
  readmeCommandsTable,
  recipePathsOf,
  synopsis,
} from './docs-check.js';

const page = [
  'Run `atk eval <recipe or run> [--split NAME] [--checkpoint base|latest]` or `atk view`.',
  '<!-- lead: `atk model fetch x` is not shown -->',
  '```sh',
  'npm ci && npx atk setup --yes   # then',
  'CI=true atk run recipes/quickstart.yaml train.steps=2 \\',
  '  seed=1',
  'salloc -N2 atk run recipes/gsm8k-grpo-slurm.yaml',
  '```',
  '```yaml',
  'atk: not a command line',
  '```',
  'See recipes/helpdesk.yaml.',
].join('\n');

describe('commandLinesOf', () => {
  test('returns the atk invocations of shell blocks and inline spans, not of comments or other blocks', () => {
    expect(commandLinesOf(page).map((l) => [l.lineNumber, l.args.join(' '), l.reference])).toStrictEqual([
      [1, 'eval recipe-or-run --split NAME --checkpoint base', true],
      [1, 'view', true],
      [4, 'setup --yes', false],
      [6, 'run recipes/quickstart.yaml train.steps=2 seed=1', false],
      [7, 'run recipes/gsm8k-grpo-slurm.yaml', false],
    ]);
  });
});

describe('synopsis', () => {
  test('returns placeholders as one word, optional parts as given with their first alternative, and no ellipsis', () => {
    expect(synopsis('atk x <a b> [--c d|e] [k=v ...] model.gpus=[0,1]')).toBe('atk x a-b --c d k=v  model.gpus=[0,1]');
  });
});

describe('parsesStrictly', () => {
  const line = (source: string, reference = false) =>
    commandLinesOf(reference ? `\`${source}\`` : `\`\`\`sh\n${source}\n\`\`\``)[0]!;

  test('returns undefined for a line atk parses, and the error atk would print for one that drifted', async () => {
    expect(await parsesStrictly(line('atk run recipes/quickstart.yaml seed=1 --no-tui'))).toBeUndefined();
    expect(await parsesStrictly(line('atk run recipes/quickstart.yaml --steps 3'))).toBe('Unknown argument: steps');
    expect(await parsesStrictly(line('atk evaluate runs/x'))).toBe('Did you mean validate?');
    expect(await parsesStrictly(line('atk runs compare'))).toMatch(/^Not enough non-option arguments/);
  });

  test('returns undefined for a reference that leaves out what a whole line needs, not for an unknown flag', async () => {
    expect(await parsesStrictly(line('atk runs compare', true))).toBeUndefined();
    expect(await parsesStrictly(line('atk launch <launcher> <recipe>', true))).toBeUndefined();
    expect(await parsesStrictly(line('atk eval --no-such-flag', true))).toMatch(/^Unknown arguments?: /);
  });
});

describe('recipePathsOf', () => {
  test('returns each recipe path named, with the overrides of the atk line that names it', () => {
    expect(recipePathsOf(page).map((r) => [r.path, r.overrides.join(' ')])).toStrictEqual([
      ['recipes/quickstart.yaml', 'train.steps=2 seed=1'],
      ['recipes/gsm8k-grpo-slurm.yaml', ''],
      ['recipes/quickstart.yaml', ''],
      ['recipes/helpdesk.yaml', ''],
    ]);
  });
});

describe('readmeCommandsTable', () => {
  test("returns the Commands section's rows, escaped pipes read back", () => {
    const readme =
      '## Commands\n\n| command | what |\n| --- | --- |\n| `atk a <b>` | does a \\| b |\n\n## Next\n| `atk z` | no |\n';
    expect(readmeCommandsTable(readme)).toStrictEqual([{ usage: 'atk a <b>', describe: 'does a | b' }]);
  });
});

describe('helpCommands', () => {
  test('returns every command with its subcommands in place of their group, as --help lists them', async () => {
    const usages = (await helpCommands()).map((r) => r.usage);
    expect(usages.slice(0, 4)).toStrictEqual([
      'atk init [path]',
      'atk validate <recipe> [overrides..]',
      'atk explain <recipe> [overrides..]',
      'atk run [recipe] [overrides..]',
    ]);
    expect(usages).toContain('atk runs show <run>');
    expect(usages).not.toContain('atk runs <command>');
  });
});
