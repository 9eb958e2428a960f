import yargs from 'yargs';
import { describe, expect, test } from 'vitest';
import { commands } from './commands.js';

/** `atk <path> --help` as yargs prints it, parsed in this process. */
async function help(path: readonly string[]): Promise<string> {
  const parser = yargs().scriptName('atk').strict().help().exitProcess(false);
  for (const command of commands) parser.command(command);
  return new Promise((resolve, reject) => {
    void parser.parse([...path, '--help'], {}, (error, _argv, output) => (error ? reject(error) : resolve(output)));
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

describe('commands', () => {
  test('returns --help with at least one example for every command and subcommand', async () => {
    const paths = await commandPaths();
    expect(paths.map((p) => p.join(' '))).toEqual(
      expect.arrayContaining(['run', 'eval', 'validate', 'runs ls', 'runs show', 'runs compare', 'data fetch']),
    );
    const withoutExample: string[] = [];
    for (const path of paths) if (!/\nExamples:\n {2}atk /.test(await help(path))) withoutExample.push(path.join(' '));
    expect(withoutExample).toStrictEqual([]);
  });
});
