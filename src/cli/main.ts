/**
 * The CLI entry point: the only place that catches errors and sets the exit code.
 */
import yargs, { type Argv } from 'yargs';
import { registerBuiltins } from '../builtins.js';
import { AtkError } from '../errors/index.js';
import { atkVersion } from '../runs/index.js';
import { commands } from './commands.js';
import { usageError, withExamples } from './define-command.js';

/** Parse argv and run one command. Resolves after setting process.exitCode. */
export async function main(argv: readonly string[]): Promise<void> {
  // yargs' own --version is off (it would print before a command's options are checked); this is ours.
  if (argv.length === 1 && argv[0] === '--version') {
    process.stdout.write(`${atkVersion()}\n`);
    return;
  }
  registerBuiltins();
  try {
    await atkParser(argv).parseAsync();
  } catch (error) {
    process.exitCode = report(error);
  }
}

/** The workflow `atk --help` shows, in the order a user meets it. */
const WORKFLOW: readonly (readonly [string, string])[] = [
  ['$0 init my-experiment', 'write a commented starter recipe (and its JSON Schema) into my-experiment/'],
  ['$0 validate my-experiment/quickstart.yaml', 'check it: every problem at once, before anything runs'],
  ['$0 explain my-experiment/quickstart.yaml', 'the objective it optimises, term by term'],
  ['$0 run my-experiment/quickstart.yaml', 'train: a dashboard on a terminal, a run directory under runs/'],
  ['$0 view', 'every run under runs/ in the browser, live while they train'],
  ['$0 eval runs/quickstart/v001', "score the run's newest checkpoint on held-out tasks"],
  ['$0 export runs/quickstart/v001 ./my-model', 'the trained model as a Hugging Face directory'],
];

/**
 * atk's command-line parser: every command, strict (an unknown option or command is a usage error, exit 2),
 * and a failure thrown rather than printed, for `main` to report. The docs test parses documented command
 * lines with it.
 */
export function atkParser(argv: readonly string[]): Argv {
  const parser = yargs([...argv])
    .scriptName('atk')
    .usage(
      '$0 <command> [options]\n\nTrain tool-using LLM agents with reinforcement learning from a YAML recipe.\n' +
        'Start here: atk run recipes/quickstart.yaml (a shipped tiny model learns to use a calculator, on a CPU).',
    )
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
  return withExamples(parser, WORKFLOW).epilogue(
    'Each command has --help with examples; the guides are in docs/ of the atk package (README.md lists them).',
  );
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
