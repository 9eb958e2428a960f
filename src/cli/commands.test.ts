import { describe, expect, test } from 'vitest';
import { parsesStrictly, shellSegments } from '../__fixtures__/docs-check.js';
import { atkParser } from './main.js';

/** `atk <path> --help` as yargs prints it at 100 columns, parsed in this process. */
async function help(path: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    atkParser([])
      .exitProcess(false)
      .wrap(100)
      .parse([...path, '--help'], {}, (error, _argv, output) => (error ? reject(error) : resolve(output)));
  });
}

/** Every command path, subcommands included (read from each help's Commands: section). */
async function commandPaths(path: readonly string[] = []): Promise<string[][]> {
  const text = await help(path);
  const listed = text.split('Commands:\n')[1]?.split('\n\n')[0] ?? '';
  const children = [...listed.matchAll(/^ {2}atk ((?:[a-z][\w-]* ?)+)/gm)]
    .map((m) => m[1]!.trim().split(' '))
    .filter((p) => p.length === path.length + 1);
  const nested = await Promise.all(children.map((child) => commandPaths(child)));
  return [...(path.length ? [[...path]] : []), ...nested.flat()];
}

/** The example command lines of a help text: the `atk ...` rows under Examples:, each after its `# meaning` row. */
function examples(text: string): string[] {
  const section = text.split('\nExamples:\n')[1]?.split('\n\n')[0] ?? '';
  return section
    .split('\n')
    .filter((line) => line.startsWith('  atk '))
    .map((line) => line.slice(2));
}

/** Undefined when `line` parses under atk's strict parser (no command runs), else the error. */
function parseError(line: string): Promise<string | undefined> {
  const [words = []] = shellSegments(line);
  return parsesStrictly({ source: line, args: words.slice(1), lineNumber: 0, reference: false });
}

describe('commands', () => {
  test('returns --help with at least one example for every command and subcommand, the top level included', async () => {
    const paths = await commandPaths();
    expect(paths.map((p) => p.join(' '))).toEqual(
      expect.arrayContaining(['run', 'eval', 'validate', 'runs ls', 'runs show', 'runs compare', 'data fetch']),
    );
    const withoutExample: string[] = [];
    for (const path of [[], ...paths]) if (examples(await help(path)).length === 0) withoutExample.push(path.join(' '));
    expect(withoutExample).toStrictEqual([]);
  });

  test('returns examples that copy as one line and parse under the strict parser', async () => {
    const broken: string[] = [];
    for (const path of [[], ...(await commandPaths())]) {
      const text = await help(path);
      const section = text.split('\nExamples:\n')[1]?.split('\n\n')[0] ?? '';
      // Each example is a `# meaning` row (which may wrap), then the command on one row of its own.
      const rows = section.split('\n');
      for (const [i, row] of rows.entries())
        if (rows[i - 1]?.startsWith('  atk ') && !row.startsWith('  # ')) broken.push(`${path.join(' ')}: ${row}`);
      for (const line of examples(text)) {
        const error = await parseError(line);
        if (error !== undefined) broken.push(`${line}: ${error}`);
      }
    }
    expect(broken).toStrictEqual([]);
  });

  test('returns the top-level help with a start-here line and the workflow in order', async () => {
    const text = await help([]);
    expect(text).toContain('Start here: atk run recipes/quickstart.yaml');
    expect(examples(text).map((line) => line.split(' ')[1])).toStrictEqual([
      'init',
      'validate',
      'explain',
      'run',
      'view',
      'eval',
      'export',
    ]);
  });

  test('rejects an example that does not parse, as the check above would report it', async () => {
    expect(await parseError('atk run recipes/quickstart.yaml --no-such-flag')).toContain('Unknown argument');
    expect(await parseError('atk runs compare')).toContain('Not enough non-option arguments');
    expect(await parseError('atk run recipes/quickstart.yaml')).toBeUndefined();
  });
});
