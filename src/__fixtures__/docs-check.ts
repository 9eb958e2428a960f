/**
 * What test/docs.test.ts checks the README and docs/ with: the atk command lines a page shows, parsed by
 * atk's own strict parser without running them; the recipe paths a page names; the README's commands table
 * and the commands as their --help lists them.
 */
import { atkParser } from '../cli/main.js';

/** One atk command line of a page: as written, its arguments after `atk`, and whether it is a reference. */
export interface DocCommandLine {
  readonly source: string;
  readonly args: readonly string[];
  readonly lineNumber: number;
  /**
   * An inline code span (`atk eval`, `atk explain <recipe> [key=value ...]`) names a command and its flags
   * without being a whole command line: its required positionals and options may be left out.
   */
  readonly reference: boolean;
}

/** Shell code blocks hold command lines; blocks marked as another language (yaml, text, ...) do not. */
const SHELL_BLOCK = /^(sh|bash|shell|console|)$/;
/** Commands that run the command after their own arguments. */
const WRAPPERS = new Set(['salloc', 'srun', 'sbatch', 'timeout', 'nohup', 'env', 'time']);

/** Every atk command line of a markdown page: each line of a shell code block that runs atk, and each inline `atk ...` span. */
export function commandLinesOf(markdown: string): DocCommandLine[] {
  const found: DocCommandLine[] = [];
  const lines = withoutComments(markdown).split('\n');
  let block: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = line.match(/^\s*```+\s*([\w-]*)/);
    if (fence) {
      block = block === undefined ? fence[1]! : undefined;
      continue;
    }
    if (block !== undefined) {
      if (!SHELL_BLOCK.test(block)) continue;
      let joined = line;
      while (joined.endsWith('\\') && i + 1 < lines.length) joined = `${joined.slice(0, -1)} ${lines[++i]}`;
      for (const args of atkInvocations(synopsis(joined)))
        found.push({ source: joined.trim(), args, lineNumber: i + 1, reference: false });
      continue;
    }
    for (const span of line.matchAll(/`((?:npx )?(?:\.\/bin\/)?atk [^`]+)`/g)) {
      for (const args of atkInvocations(synopsis(span[1]!)))
        found.push({ source: span[1]!, args, lineNumber: i + 1, reference: true });
    }
  }
  return found;
}

/** The page without its HTML comments (notes to maintainers, not shown), keeping the line numbers. */
function withoutComments(markdown: string): string {
  return markdown.replace(/<!--[\s\S]*?-->/g, (comment) => comment.replace(/[^\n]/g, ''));
}

/**
 * A synopsis as a command line the parser can check: `<run-dir>` and `<recipe or run>` stand for a value (one
 * word); an optional part `[--split NAME]` is checked as if given, the first of its alternatives `a|b` taken;
 * `...` (more of the same) is dropped.
 */
export function synopsis(line: string): string {
  return line
    .replace(/<([^<>]+)>/g, (_, inner: string) => inner.trim().replace(/\s+/g, '-'))
    .replace(
      /(^|\s)\[([^\]]*)\]/g,
      (_, space: string, inner: string) => space + inner.replace(/([^\s|]+)(?:\|[^\s|]+)+/g, '$1'),
    )
    .replace(/(^|\s)(\.\.\.|…)(?=\s|$)/g, ' ');
}

/** The arguments of each atk invocation in a shell line (`npx atk ...`, `CI=true atk ...`, `a && atk ...`). */
function atkInvocations(line: string): string[][] {
  const invocations: string[][] = [];
  for (const segment of shellSegments(line)) {
    let words = segment;
    while (words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!) || words[0] === '$' || words[0] === 'npx'))
      words = words.slice(1);
    if (words.length && WRAPPERS.has(words[0]!)) {
      const at = words.findIndex((w) => isAtk(w));
      if (at > 0) words = words.slice(at);
    }
    if (words.length && isAtk(words[0]!)) invocations.push(words.slice(1));
  }
  return invocations;
}

function isAtk(word: string): boolean {
  return word === 'atk' || word.endsWith('/atk');
}

/** A shell line as the words of each command (split at `&&`, `||`, `;`, `|`), quotes removed, from `#` on a comment. */
export function shellSegments(line: string): string[][] {
  const segments: string[][] = [[]];
  let word: string | undefined;
  const end = (): void => {
    if (word !== undefined) segments.at(-1)!.push(word);
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      const stop = close === -1 ? line.length : close;
      word = (word ?? '') + line.slice(i + 1, stop);
      i = stop;
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[++i];
    } else if (/\s/.test(c)) {
      end();
    } else if (c === '#' && word === undefined) {
      break;
    } else if (c === '&' || c === '|' || c === ';') {
      end();
      if (line[i + 1] === c) i++;
      segments.push([]);
    } else {
      word = (word ?? '') + c;
    }
  }
  end();
  return segments.filter((s) => s.length > 0);
}

const PARSED = Symbol('parsed');

/** What a reference leaves out is filled with this word; the parser's verdict on it is not the page's. */
const FILLER = 'x';

/**
 * Parses `atk <args>` with atk's own strict parser and runs no command: undefined when it parses, else the
 * error atk would print. A reference (and a line asking for `--help`) may leave out required positionals and
 * options: they are filled in and the line parsed again, so that its flags are still checked. A placeholder
 * (`<launcher>`) stands for any of the values the parser accepts.
 */
export async function parsesStrictly(line: DocCommandLine): Promise<string | undefined> {
  if (line.args.length === 1 && line.args[0] === '--version') return undefined;
  const partial = line.reference || line.args.some((a) => a === '--help' || a === '-h');
  let args = line.args.filter((a) => a !== '--help' && a !== '-h');
  const stands = new Set([...line.source.matchAll(/<([^<>]+)>/g)].map((m) => m[1]!.trim().replace(/\s+/g, '-')));
  for (let attempt = 0; ; attempt++) {
    const message = await parseError(args);
    if (message === undefined) return undefined;
    const given = [...message.matchAll(/Given: "([^"]*)"/g)].map((m) => m[1]!);
    if (given.length > 0 && given.every((value) => stands.has(value) || (partial && value === FILLER)))
      return undefined;
    if (!partial || attempt === 5) return message;
    const positionals = message.match(/^Not enough non-option arguments: got (\d+), need at least (\d+)/);
    const option = message.match(/^Missing required arguments?: ([\w-]+)/);
    if (positionals) {
      // The fillers go after the command and the positionals given, before the first flag.
      const at = args.findIndex((a) => a.startsWith('-'));
      const cut = at === -1 ? args.length : at;
      const missing = Number(positionals[2]) - Number(positionals[1]);
      args = [...args.slice(0, cut), ...Array<string>(missing).fill(FILLER), ...args.slice(cut)];
    } else if (option) {
      args = [...args, `--${option[1]}`, FILLER];
    } else {
      return message;
    }
  }
}

async function parseError(args: readonly string[]): Promise<string | undefined> {
  const parser = atkParser(args).exitProcess(false);
  parser.middleware(() => {
    throw PARSED;
  }, false);
  try {
    await parser.parseAsync(); // yargs throws a failure synchronously or rejects with it, depending on where it arose
    return 'no command matched';
  } catch (error) {
    if (error === PARSED) return undefined;
    return error instanceof Error ? error.message : String(error);
  }
}

/** A recipe file a page names, with the overrides an atk line gives beside it. */
export interface DocRecipe {
  readonly path: string;
  readonly overrides: readonly string[];
  readonly lineNumber: number;
}

const RECIPE = /(?:^|[\s`'"(=])(?:\.\.?\/)*(recipes\/[\w./-]+\.ya?ml)\b/g;

/** Every shipped recipe path (`recipes/...yaml`) a page names, once per distinct overrides. */
export function recipePathsOf(markdown: string): DocRecipe[] {
  const found = new Map<string, DocRecipe>();
  const add = (recipe: DocRecipe): void => {
    const key = `${recipe.path} ${recipe.overrides.join(' ')}`;
    if (!found.has(key)) found.set(key, recipe);
  };
  for (const line of commandLinesOf(markdown)) {
    const at = line.args.findIndex((a) => /^(?:\.\.?\/)*recipes\/[\w./-]+\.ya?ml$/.test(a));
    if (at === -1) continue;
    const path = line.args[at]!.replace(/^(?:\.\.?\/)+/, '');
    const overrides = line.args.slice(at + 1).filter((a) => /^[\w.]+=/.test(a));
    add({ path, overrides, lineNumber: line.lineNumber });
  }
  for (const [i, text] of withoutComments(markdown).split('\n').entries())
    for (const match of text.matchAll(RECIPE)) add({ path: match[1]!, overrides: [], lineNumber: i + 1 });
  return [...found.values()];
}

/** A row of a commands table: the usage as `--help` prints it (`atk runs show <run>`) and what the command does. */
export interface CommandRow {
  readonly usage: string;
  readonly describe: string;
}

/** The rows of the README's `## Commands` table, in order. */
export function readmeCommandsTable(markdown: string): CommandRow[] {
  const section = markdown.split(/^## Commands\s*$/m)[1]?.split(/^## /m)[0] ?? '';
  return section
    .split('\n')
    .filter((line) => /^\|\s*`atk /.test(line))
    .map((line) => {
      const cells = line
        .slice(1, line.lastIndexOf('|'))
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replace(/\\\|/g, '|'));
      return { usage: cells[0]!.replace(/^`|`$/g, ''), describe: cells[1] ?? '' };
    });
}

/**
 * Every command as `atk --help` and each group's `--help` list it (`atk runs <command>` replaced by its
 * subcommands), in their order, unwrapped.
 */
export async function helpCommands(path: readonly string[] = []): Promise<CommandRow[]> {
  const output = await new Promise<string>((resolve, reject) => {
    atkParser([])
      .exitProcess(false)
      .wrap(null)
      .parse([...path, '--help'], {}, (error, _argv, text) => (error ? reject(error) : resolve(text)));
  });
  const listed = output.split('\nCommands:\n')[1]?.split('\n\n')[0] ?? '';
  const rows: CommandRow[] = [];
  for (const line of listed.split('\n')) {
    const match = line.match(/^ {2}(atk \S.*?) {2,}(\S.*)$/);
    if (!match) continue;
    const usage = match[1]!.trim();
    const words = usage.split(' ').slice(1);
    if (words.at(-1) === '<command>') rows.push(...(await helpCommands(words.slice(0, -1))));
    else rows.push({ usage, describe: match[2]!.trim() });
  }
  return rows;
}
