import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError } from '../errors/index.js';
import { recipeJsonSchema } from '../recipe/index.js';
import { closestName } from '../util/did-you-mean.js';
import { projectRoot } from '../util/paths.js';
import { defineCommand } from './define-command.js';

/** The JSON Schema file `atk init` writes beside the recipe, for offline editor completion. */
export const SCHEMA_FILE = 'recipe.schema.json';

/** Options of `atk init`. */
export interface InitOptions {
  /** A starter from recipes/examples/ (quickstart, gsm8k, deepcoder, tau2). */
  readonly example: string;
  /** Recipe file (`.yaml`/`.yml`) or directory to write into (any other path); default `<example>.yaml` in the current directory. */
  readonly path?: string;
  readonly force: boolean;
}

/**
 * `atk init`: write a commented starter recipe whose first line points editors at a copy of the
 * recipe JSON Schema written beside it (`# yaml-language-server: $schema=./recipe.schema.json`),
 * so key completion and checking work offline. A path without .yaml/.yml is a directory that gets
 * `<example>.yaml` and the schema. A starter that is a folder (recipes/examples/custom/: recipe,
 * tool and reward modules, data) is copied whole into a directory of that name.
 * @throws InputError for an unknown example or when a file exists and `force` is not set.
 */
export async function runInit(
  options: InitOptions,
): Promise<{ readonly recipePath: string; readonly schemaPath: string; readonly companions: readonly string[] }> {
  const examples = await exampleNames();
  if (!examples.includes(options.example)) {
    const near = closestName(options.example, examples);
    throw new InputError(
      `unknown example '${options.example}'${near ? ` (did you mean '${near}'?)` : ''}; examples: ${examples.join(', ')}`,
      {
        hint: 'atk init --example quickstart',
      },
    );
  }
  const folder = join(examplesDir(), options.example);
  const isFolder = (await stat(folder).catch(() => undefined))?.isDirectory() ?? false;
  const source = isFolder ? join(folder, `${options.example}.yaml`) : `${folder}.yaml`;
  const target = resolve(options.path ?? (isFolder ? options.example : `${options.example}.yaml`));
  // A path without .yaml/.yml is a directory for every starter (as `promptfoo init my-experiment`),
  // so the schema file lands inside it, never loose beside it.
  const intoDir =
    isFolder || !/\.ya?ml$/i.test(target) || ((await stat(target).catch(() => undefined))?.isDirectory() ?? false);
  const recipePath = intoDir ? join(target, `${options.example}.yaml`) : target;
  const dir = dirname(recipePath);
  const schemaPath = join(dir, SCHEMA_FILE);
  const companions = isFolder
    ? (await readdir(folder)).filter((f) => f !== basename(source)).map((f) => join(dir, f))
    : [];
  if (!options.force) {
    for (const path of [recipePath, ...companions]) {
      if (await exists(path))
        throw new InputError(`${path} already exists; not overwriting it`, {
          hint: 'pass --force to overwrite, or name another path',
        });
    }
    if ((await exists(schemaPath)) && !(await isOurSchema(schemaPath))) {
      throw new InputError(`${schemaPath} exists and is not an atk recipe schema; not overwriting it`, {
        hint: 'pass --force to overwrite',
      });
    }
  }
  await mkdir(dir, { recursive: true });
  await Promise.all(companions.map((path) => copyFile(join(folder, basename(path)), path)));
  const example = await readFile(source, 'utf8');
  await writeFile(schemaPath, `${JSON.stringify(recipeJsonSchema(), null, 2)}\n`);
  await writeFile(
    recipePath,
    `# yaml-language-server: $schema=./${SCHEMA_FILE}\n${example.replace(/^# atk run \S+/m, `# atk run ${basename(recipePath)}`)}`,
  );
  return { recipePath, schemaPath, companions };
}

/** The starters `--example` accepts: recipes/examples/NAME.yaml, or a folder NAME/ holding NAME.yaml. */
export async function exampleNames(): Promise<string[]> {
  const entries = await readdir(examplesDir(), { withFileTypes: true });
  const names = entries.flatMap((e) => {
    if (e.isFile() && e.name.endsWith('.yaml')) return [e.name.slice(0, -'.yaml'.length)];
    if (e.isDirectory() && existsSync(join(examplesDir(), e.name, `${e.name}.yaml`))) return [e.name];
    return [];
  });
  return names.sort();
}

function examplesDir(): string {
  return join(projectRoot(), 'recipes', 'examples');
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

async function isOurSchema(path: string): Promise<boolean> {
  try {
    return (JSON.parse(await readFile(path, 'utf8')) as { title?: unknown }).title === recipeJsonSchema().title;
  } catch {
    return false;
  }
}

export const initCommand = defineCommand({
  command: 'init [path]',
  describe: 'Write a commented starter recipe (and its JSON Schema, for editor completion)',
  positionals: {
    path: {
      type: 'string',
      describe: 'Recipe file (.yaml/.yml), or a directory to create and write into (default: <example>.yaml here)',
    },
  },
  options: {
    example: {
      type: 'string',
      default: 'quickstart',
      describe: 'Starter: quickstart, gsm8k, deepcoder, tau2, or custom (your own tasks, tool and reward modules)',
    },
    force: { type: 'boolean', default: false, describe: 'Overwrite existing files' },
  },
  examples: [
    ['$0 init', 'quickstart.yaml: the tiny embedded model learning arithmetic with a calculator, on CPU'],
    ['$0 init my-gsm8k.yaml --example gsm8k', 'a GSM8K recipe for a GPU with vLLM'],
  ],
  handler: async (args) => {
    const { recipePath, schemaPath, companions } = await runInit({
      example: args.example,
      force: args.force,
      ...(args.path !== undefined && { path: args.path }),
    });
    const also = companions.map((path) => `wrote ${path}\n`).join('');
    process.stdout.write(
      `wrote ${recipePath}\n${also}wrote ${schemaPath} (editor completion)\nnext: atk validate ${recipePath}\n`,
    );
  },
});
