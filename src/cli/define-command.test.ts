import yargs from 'yargs';
import { describe, expect, test } from 'vitest';
import { AtkError } from '../errors/index.js';
import { defineCommand } from './define-command.js';

describe('defineCommand', () => {
  const seen: unknown[] = [];
  const command = defineCommand({
    command: 'greet <name> [extra..]',
    describe: 'Greet someone',
    positionals: {
      name: { type: 'string', demandOption: true, describe: 'Who' },
      extra: { type: 'string', array: true, default: [], describe: 'More words' },
    },
    options: {
      'runs-dir': { type: 'string', default: 'runs', describe: 'Where' },
      loud: { type: 'boolean', default: false, describe: 'Shout' },
    },
    examples: [['$0 greet ada', 'greet Ada']],
    check: (argv) => (argv.name === 'nobody' ? 'name someone' : undefined),
    handler: (argv) => {
      seen.push({
        name: argv.name,
        extra: argv.extra,
        runsDir: argv.runsDir,
        kebab: argv['runs-dir'],
        loud: argv.loud,
      });
    },
  });
  // async: yargs throws a failed check synchronously out of parseAsync.
  const parse = async (line: string): Promise<unknown> =>
    yargs(line.split(' '))
      .command(command)
      .strict()
      .exitProcess(false)
      .fail((message, error) => {
        throw error ?? new Error(message);
      })
      .parseAsync();

  test('returns argv typed and named as the option objects say, camelCase included', async () => {
    seen.length = 0;
    await parse('greet ada hello there --loud');
    expect(seen).toStrictEqual([
      { name: 'ada', extra: ['hello', 'there'], runsDir: 'runs', kebab: 'runs', loud: true },
    ]);
  });

  test('rejects a command line its check refuses with a usage error (exit code 2)', async () => {
    const error = await parse('greet nobody').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtkError);
    expect([(error as AtkError).message, (error as AtkError).exitCode]).toStrictEqual(['name someone', 2]);
  });

  test('returns --help with the positionals, options and examples in the order given', async () => {
    const output = await new Promise<string>((resolve) => {
      void yargs()
        .scriptName('atk')
        .command(command)
        .exitProcess(false)
        .parse(['greet', '--help'], {}, (_error, _argv, text) => resolve(text));
    });
    expect(output.match(/^ {2}(name|extra|--runs-dir|--loud)\b/gm)).toStrictEqual([
      '  name',
      '  extra',
      '  --runs-dir',
      '  --loud',
    ]);
    expect(output).toMatch(/Examples:\n {2}# greet Ada\n {2}atk greet ada$/);
  });
});
