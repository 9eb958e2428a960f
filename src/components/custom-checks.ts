import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';
import { requiredColumns } from '../datasets/file.js';
import { readFileRows } from '../datasets/file-rows.js';
import { rewardComponents } from '../rewards/components.js';
import { rewardFunction } from '../rewards/module.js';
import { toolsFromExports } from '../tools/module.js';
import { loadUserModule } from '../util/load-module.js';
import type { Recipe } from '../recipe/schema.js';

/** One problem with a user's own component, at a dotted recipe key (`tools.0.export`). */
export interface CustomComponentProblem {
  readonly path: string;
  readonly message: string;
}

/** Rows of a data file read to check that the mapped columns exist. */
const ROWS_CHECKED = 5;

/**
 * Checks a recipe's own components before anything starts: tool and reward modules load and
 * export what the recipe names, MCP server and reward commands are executable, judge API keys are
 * set, and a file dataset exists, is readable and has the mapped columns in its first rows.
 * Relative paths resolve against `recipeDir`. Loading a module runs its top-level code.
 */
export async function validateCustomComponents(
  recipe: Pick<Recipe, 'tools' | 'reward' | 'dataset'>,
  recipeDir: string,
): Promise<CustomComponentProblem[]> {
  const problems: CustomComponentProblem[] = [];
  const found = (path: string) => (message: string | undefined) => void (message && problems.push({ path, message }));
  await Promise.all([
    ...recipe.tools.map(async (tool, i) => {
      if (tool.module !== undefined) {
        const problem = await moduleProblem(tool.module, tool.export, recipeDir, (exports, file) =>
          toolsFromExports(exports, file, tool.export),
        );
        if (problem) found(`tools.${i}.${problem.key}`)(problem.message);
      }
      if (tool.mcp && 'command' in tool.mcp)
        found(`tools.${i}.mcp.command`)(await notExecutable(tool.mcp.command, resolve(recipeDir, tool.mcp.cwd ?? '.')));
    }),
    ...rewardComponents(recipe.reward).map(async (component) => {
      const { options, path } = component;
      if (component.name === 'module') {
        const module = String(options.module);
        const name = options.export === undefined ? undefined : String(options.export);
        const problem = await moduleProblem(module, name, recipeDir, (exports, file) =>
          rewardFunction(exports, file, name),
        );
        if (problem) found(`${path}.${problem.key}`)(problem.message);
      } else if (component.name === 'command') {
        found(`${path}.command.0`)(await notExecutable((options.command as string[])[0]!, recipeDir));
      } else if (component.name === 'judge') {
        const env = (options as { api_key_env?: string }).api_key_env;
        if (env !== undefined && !process.env[env])
          found(`${path}.judge.api_key_env`)(`environment variable ${env} is not set`);
      }
    }),
    datasetProblems(recipe.dataset, recipeDir).then((list) => problems.push(...list)),
  ]);
  return problems;
}

/**
 * What is wrong with a module component: at `module` when the file is missing or fails to load,
 * at `export` when the named export is missing or not usable.
 */
async function moduleProblem(
  module: string,
  name: string | undefined,
  recipeDir: string,
  use: (exports: Readonly<Record<string, unknown>>, file: string) => unknown,
): Promise<{ key: string; message: string } | undefined> {
  const file = resolve(recipeDir, module);
  let exports: Readonly<Record<string, unknown>>;
  try {
    exports = await loadUserModule(file);
  } catch (error) {
    return { key: 'module', message: shortMessage(error, file) };
  }
  try {
    use(exports, file);
    return undefined;
  } catch (error) {
    return { key: name === undefined ? 'module' : 'export', message: shortMessage(error, file) };
  }
}

async function datasetProblems(dataset: Recipe['dataset'], recipeDir: string): Promise<CustomComponentProblem[]> {
  if (dataset.name !== 'file') return [];
  if (dataset.path === undefined)
    return [{ path: 'dataset.path', message: 'the file dataset needs a data file (.jsonl, .json, .csv or .parquet)' }];
  const files: [string, string][] = [['dataset.path', resolve(recipeDir, dataset.path)]];
  if (dataset.split_by && 'file' in dataset.split_by)
    files.push(['dataset.split_by.file', resolve(recipeDir, dataset.split_by.file)]);
  const problems: CustomComponentProblem[] = [];
  for (const [key, file] of files) {
    let rows: Awaited<ReturnType<typeof readFileRows>>;
    try {
      rows = await readFileRows(file, dataset.format, ROWS_CHECKED);
    } catch (error) {
      problems.push({ path: key, message: shortMessage(error, file) });
      continue;
    }
    const metadata = dataset.fields?.metadata ?? [];
    for (const { column, key: fieldKey } of requiredColumns(dataset)) {
      const row = rows.find((r) => r.values[column] === undefined || r.values[column] === null);
      if (!row) continue;
      const at = fieldKey === 'dataset.fields.metadata' ? `${fieldKey}.${metadata.indexOf(column)}` : fieldKey;
      problems.push({
        path: at,
        message: `column '${column}' is missing in ${displayFile(file, recipeDir)} row ${row.row}`,
      });
    }
  }
  return problems;
}

/**
 * Why `command` cannot be run from `cwd`, or undefined when it can (a path, or a name on $PATH). A
 * path inside `cwd` is shown as `./<relative>` (the loader makes a recipe's command paths absolute).
 */
async function notExecutable(command: string, cwd: string): Promise<string | undefined> {
  const path = isAbsolute(command) ? command : resolve(cwd, command);
  const candidates = command.includes('/')
    ? [path]
    : (process.env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return undefined;
    } catch {
      // try the next $PATH entry
    }
  }
  const shown = displayFile(path, cwd);
  return command.includes('/')
    ? `${isAbsolute(shown) ? shown : `./${shown}`} is not an executable file`
    : `command '${command}' is not on $PATH`;
}

/** A data file named relative to the recipe directory when it lies inside it, else absolute. */
function displayFile(file: string, recipeDir: string): string {
  const rel = relative(recipeDir, file);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

/** The error's message without the leading absolute file name the recipe key already points at. */
function shortMessage(error: unknown, file: string): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.startsWith(`${file}: `)
    ? message.slice(file.length + 2)
    : message.startsWith(`${file} `)
      ? message.slice(file.length + 1)
      : message;
}
