/**
 * The CLI entry point: the only place that catches errors and sets the exit code.
 */
import yargs from 'yargs';
import { registerBuiltins } from '../builtins.js';
import { AtkError } from '../errors/index.js';
import { atkVersion } from '../runs/index.js';
import { commands } from './commands.js';
import { usageError } from './define-command.js';

/** Parse argv and run one command. Resolves after setting process.exitCode. */
export async function main(argv: readonly string[]): Promise<void> {
  // yargs' own --version is off (it would print before a command's options are checked); this is ours.
  if (argv.length === 1 && argv[0] === '--version') {
    process.stdout.write(`${atkVersion()}\n`);
    return;
  }
  registerBuiltins();
  try {
    const parser = yargs([...argv])
      .scriptName('atk')
      .usage('$0 <command> [options]\n\nTrain tool-using LLM agents with reinforcement learning from a YAML recipe.')
      .strict()
      .demandCommand(1, 'Name a command; see atk --help.')
      .recommendCommands()
      .help()
      .alias('h', 'help')
      .version(false)
      .option('version', { type: 'boolean', describe: 'Print the atk version', global: false })
      .wrap(Math.min(110, process.stdout.columns || 100))
      .fail((message, error) => {
        if (error) throw error;
        throw usageError(message ?? 'bad command line');
      });
    for (const command of commands) parser.command(command);
    await parser.parseAsync();
  } catch (error) {
    process.exitCode = report(error);
  }
}

function report(error: unknown): number {
  if (error instanceof AtkError) {
    process.stderr.write(`${error.message}\n`);
    if (error.hint) process.stderr.write(`hint: ${error.hint}\n`);
    return error.exitCode;
  }
  const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(
    `internal error: this is a bug in atk.\n${stack}\n` +
      `node ${process.version} on ${process.platform}-${process.arch}\n` +
      'Please report it with the command you ran.\n',
  );
  return 1;
}
