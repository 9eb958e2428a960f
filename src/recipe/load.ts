/**
 * `loadRecipe`: file -> `extends` chain -> overrides -> schema -> presets and paths -> semantic
 * checks and each component's options against the component's own schema. Every problem found at a stage is reported together, located in the file (or the
 * override) it came from; a later stage runs only when the earlier ones left something sound to
 * check, so no problem is a consequence of another.
 */
import { realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { ConfigError, type ConfigIssue } from '../errors/index.js';
import { checkOptions, checkRecipe } from './checks.js';
import { locateZodIssues } from './issues.js';
import {
  formatPath,
  locate,
  mergeNodes,
  nodeAt,
  toPlain,
  withoutKey,
  type KeyPath,
  type LocatedNode,
  type SourceLocation,
} from './located.js';
import { applyOverrides, OVERRIDES_FILE, parseOverrides } from './overrides.js';
import { resolveRecipe, type ResolvedRecipe } from './resolve.js';
import { RecipeSchema } from './schema.js';
import { readRecipeSource } from './source.js';

/** A loaded, validated and resolved recipe. */
export interface LoadedRecipe {
  readonly recipe: ResolvedRecipe;
  /** The top recipe file's text as written (saved as the run's recipe.yaml). */
  readonly sourceText: string;
  /** Absolute path of the recipe file. */
  readonly file: string;
  /**
   * The directory the user's tool and reward modules, commands and MCP servers resolve against:
   * the recipe file's, or `options.dir` (a run's resolved.yaml names the original recipe's).
   */
  readonly dir: string;
  /** Where the value at a dotted key path was written (file, line, column), for later checks. */
  locate(path: string): SourceLocation;
  /**
   * Where the key at a dotted path was written (a recipe file, a base it extends, or `<overrides>` line N for
   * the Nth override); undefined when no file or override gives it (a default or a preset filled it in).
   */
  written(path: string): SourceLocation | undefined;
  /**
   * The same error with issues that components reported at the placeholder file `<recipe>`
   * (see parseComponentOptions) moved to the line their key path was written on.
   */
  relocate(error: ConfigError): ConfigError;
}

/** Options of loadRecipe. */
export interface LoadRecipeOptions {
  /**
   * The directory the top file's relative paths (modules, commands, data files) resolve against,
   * when not the file's own: a run's resolved.yaml, reloaded, names the original recipe's.
   */
  readonly dir?: string;
}

/**
 * Load a recipe file with its `extends` chain and `key=value` overrides, validate it against the
 * schema and the semantic checks, and resolve it.
 * @throws ConfigError listing every problem as `file:line:col  key.path: message` (exit code 2).
 */
export async function loadRecipe(
  file: string,
  overrides: readonly string[] = [],
  options: LoadRecipeOptions = {},
): Promise<LoadedRecipe> {
  const absolute = resolve(file);
  const dir = options.dir ?? dirname(absolute);
  const chain = await loadChain(absolute, file, []);
  const parsed = parseOverrides(overrides);
  if (!chain.root || chain.issues.length > 0) throw configError([...chain.issues, ...parsed.issues], chain.files);

  const applied = applyOverrides(chain.root, parsed.overrides);
  const root = applied.root;
  const result = RecipeSchema.safeParse(toPlain(root));
  const issues = [
    ...parsed.issues,
    ...applied.issues,
    ...(result.success ? [] : locateZodIssues(result.error.issues, root)),
  ];
  if (!result.success || issues.length > 0) throw configError(issues, chain.files);

  // Relative paths resolve against the file they are written in; the top file's may be `options.dir`.
  const dirOfFile = new Map([...chain.files].map(([label, path]) => [label, label === file ? dir : dirname(path)]));
  const recipe = resolveRecipe(result.data, (path) => dirOfFile.get(locate(root, path).file) ?? process.cwd());
  const [problems, optionFailures] = await Promise.all([checkRecipe(recipe, { dir }), checkOptions(recipe)]);
  if (problems.length > 0 || optionFailures.length > 0) {
    throw configError(
      [
        ...problems.map((problem) => {
          const path = parseKeyPath(problem.path);
          return { ...locate(root, path), path: formatPath(path), message: problem.message };
        }),
        ...optionFailures.flatMap((failure) =>
          locateZodIssues(failure.issues, root, parseKeyPath(failure.path), failure.keysAt),
        ),
      ],
      chain.files,
    );
  }
  const locatePath = (path: string): SourceLocation => locate(root, parseKeyPath(path));
  return {
    recipe,
    sourceText: chain.text,
    file: absolute,
    dir,
    locate: locatePath,
    written: (path) => (nodeAt(root, parseKeyPath(path)) ? locate(root, parseKeyPath(path), 'key') : undefined),
    relocate: (error) =>
      new ConfigError(
        error.issues.map((issue) =>
          issue.file === PLACEHOLDER_FILE ? { ...issue, ...locatePath(issue.path) } : issue,
        ),
        error.hint === undefined ? {} : { hint: error.hint },
      ),
  };
}

/** The file name components use in ConfigIssues before the loader locates them. */
const PLACEHOLDER_FILE = '<recipe>';

/** `tools.0.name` -> ['tools', 0, 'name']. */
export function parseKeyPath(path: string): KeyPath {
  return path === '' ? [] : path.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

interface Chain {
  readonly root: LocatedNode | undefined;
  readonly issues: ConfigIssue[];
  /** label -> absolute path, in chain order (the recipe first). */
  readonly files: Map<string, string>;
  readonly text: string;
}

/** Read a file and, depth first, the files it extends; merge them base-first. */
async function loadChain(path: string, label: string, stack: readonly string[]): Promise<Chain> {
  const source = await readRecipeSource(path, label);
  const files = new Map([[label, path]]);
  const real = await realpath(path).catch(() => path);
  const done = (root: LocatedNode | undefined, issues: ConfigIssue[]): Chain => ({
    root,
    issues,
    files,
    text: source.text,
  });
  if (!source.root) return done(undefined, [...source.issues]);
  const root = source.root;
  const entry = root.kind === 'map' ? root.entries.get('extends') : undefined;
  if (!entry) return done(root, [...source.issues]);

  const own = withoutKey(root, 'extends');
  const at = { ...entry.node.loc, path: 'extends' };
  const target =
    entry.node.kind === 'scalar' && typeof entry.node.value === 'string' && entry.node.value !== ''
      ? entry.node.value
      : undefined;
  if (target === undefined)
    return done(own, [...source.issues, { ...at, message: 'must be the path of a base recipe file' }]);
  const targetPath = resolve(dirname(path), target);
  const targetReal = await realpath(targetPath).catch(() => targetPath);
  if ([...stack, real].includes(targetReal)) {
    const cycle = [...stack, real, targetReal].slice([...stack, real].indexOf(targetReal)).map(displayPath);
    return done(own, [...source.issues, { ...at, message: `circular extends: ${cycle.join(' -> ')}` }]);
  }
  const kind = await stat(targetPath)
    .then((s) => (s.isDirectory() ? 'directory' : 'file'))
    .catch(() => 'missing');
  if (kind !== 'file')
    return done(own, [
      ...source.issues,
      {
        ...at,
        message:
          kind === 'missing'
            ? `base recipe not found: ${displayPath(targetPath)}`
            : `base recipe is a directory: ${displayPath(targetPath)}`,
      },
    ]);

  const base = await loadChain(targetPath, displayPath(targetPath), [...stack, real]);
  for (const [l, p] of base.files) files.set(l, p);
  const issues = [...base.issues, ...source.issues];
  return done(base.root ? mergeNodes(base.root, own) : undefined, issues);
}

/** Files reached through `extends` are named relative to the current directory when that is shorter. */
function displayPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !isAbsolute(rel) && rel.length < path.length ? rel : path;
}

/** All issues, sorted by file (the recipe, then its bases in order, then the overrides), line, column. */
function configError(issues: readonly ConfigIssue[], files: ReadonlyMap<string, string>): ConfigError {
  const rank = new Map([...files.keys(), OVERRIDES_FILE].map((label, i) => [label, i]));
  const sorted = [...issues].sort(
    (a, b) => (rank.get(a.file) ?? 0) - (rank.get(b.file) ?? 0) || a.line - b.line || a.col - b.col,
  );
  return new ConfigError(sorted, {
    hint: 'the recipe reference is in docs/recipes.md; `atk schema` prints the JSON Schema',
  });
}
