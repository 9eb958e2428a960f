import type { ArgumentsCamelCase, Argv, CommandModule, InferredOptionType, Options, PositionalOptions } from 'yargs';
import { AtkError } from '../errors/index.js';

/**
 * A yargs command from plain option objects: the handler's argv is typed from them (yargs'
 * `InferredOptionType`), so a command declares each option once and casts nothing. The options are
 * registered in the order given, which is the order `--help` lists them in.
 */
export function defineCommand<
  const P extends Readonly<Record<string, PositionalOptions>> = Record<never, never>,
  const O extends Readonly<Record<string, Options>> = Record<never, never>,
>(definition: CommandDefinition<P, O>): CommandModule {
  const positionals: Readonly<Record<string, PositionalOptions>> = definition.positionals ?? {};
  const options: Readonly<Record<string, Options>> = definition.options ?? {};
  const { commands = [], examples } = definition;
  // yargs parses the command line with exactly the options the builder registers, which are the
  // objects the type is inferred from: the one place that link is asserted rather than checked.
  const typed = (argv: unknown): CommandArgs<P, O> => argv as CommandArgs<P, O>;
  return {
    command: definition.command,
    describe: definition.describe,
    builder: (yargs: Argv): Argv => {
      let built = yargs;
      for (const [name, positional] of Object.entries(positionals)) built = built.positional(name, positional);
      built = built.options(options);
      if (definition.conflicts) built = built.conflicts(definition.conflicts);
      for (const command of commands) built = built.command(command);
      if (definition.demandCommand !== undefined) built = built.demandCommand(1, definition.demandCommand);
      built = withExamples(built, examples);
      const { check } = definition;
      return check
        ? built.check((argv) => {
            const refusal = check(typed(argv));
            if (refusal !== undefined) throw usageError(refusal);
            return true;
          })
        : built;
    },
    handler: (argv) => definition.handler(typed(argv)),
  };
}

/**
 * Adds `[command line, what it does]` pairs to a parser's Examples: each as two full-width rows, a `#` comment
 * and then the command, so that a long command is never wrapped inside yargs' half-width example column and
 * copies as one line.
 */
export function withExamples(yargs: Argv, examples: readonly (readonly [string, string])[]): Argv {
  let built = yargs;
  for (const [line, meaning] of examples) built = built.example(`# ${meaning}`, '').example(line, '');
  return built;
}

/** What `defineCommand` takes. Give the option objects inline (or `as const`), so their literal types survive. */
export interface CommandDefinition<
  P extends Readonly<Record<string, PositionalOptions>>,
  O extends Readonly<Record<string, Options>>,
> {
  /** The yargs command string: the verb and its positionals, e.g. `view [runs..]`. */
  readonly command: string;
  readonly describe: string;
  /** The positionals the command string names, in its order. */
  readonly positionals?: P;
  readonly options?: O;
  /** Options that may not be given together (yargs' `conflicts`). */
  readonly conflicts?: Readonly<Record<string, string | readonly string[]>>;
  /** Subcommands (`atk runs ls`). */
  readonly commands?: readonly CommandModule[];
  /** With subcommands: the message when none is named. */
  readonly demandCommand?: string;
  /** `[command line, what it does]` pairs for the Examples section of `--help`; every command has one. */
  readonly examples: readonly (readonly [string, string])[];
  /** Refuses a command line the options alone cannot: returns why (a usage error, exit 2), or undefined. */
  readonly check?: (argv: CommandArgs<P, O>) => string | undefined;
  readonly handler: (argv: CommandArgs<P, O>) => void | Promise<void>;
}

/** The parsed argv of a command: each positional and option as its definition types it, under its name and in camelCase. */
export type CommandArgs<
  P extends Readonly<Record<string, PositionalOptions>>,
  O extends Readonly<Record<string, Options>>,
> = ArgumentsCamelCase<
  { -readonly [K in keyof P]: InferredOptionType<P[K]> } & { -readonly [K in keyof O]: InferredOptionType<O[K]> }
>;

/** A bad command line: the message, a pointer to --help, exit code 2. */
export function usageError(message: string): AtkError {
  return new AtkError('E_USAGE', message, 2, { hint: 'see atk --help' });
}
