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
  /** A starter: quickstart, gsm8k, deepcoder, tau2, external or custom (see STARTERS). */
  readonly example: string;
  /** Recipe file (`.yaml`/`.yml`) or directory to write into (any other path); default `<example>.yaml` in the current directory. */
  readonly path?: string;
  readonly force: boolean;
}

/**
 * `atk init`: write a commented starter recipe whose first line points editors at a copy of the
 * recipe JSON Schema written beside it (`# yaml-language-server: $schema=./recipe.schema.json`),
 * so key completion and checking work offline. A path without .yaml/.yml is a directory that gets
 * `<example>.yaml` and the schema. A starter with files beside it (external's agent.py; custom's
 * tool and reward modules and data) goes into a directory of its own, named after it by default.
 * @throws InputError for an unknown example or when a file exists and `force` is not set.
 */
export async function runInit(
  options: InitOptions,
): Promise<{ readonly recipePath: string; readonly schemaPath: string; readonly companions: readonly string[] }> {
  const examples = exampleNames();
  const starter = Object.hasOwn(STARTERS, options.example) ? STARTERS[options.example] : undefined;
  if (!starter) {
    const near = closestName(options.example, examples);
    throw new InputError(
      `unknown example '${options.example}'${near ? ` (did you mean '${near}'?)` : ''}; examples: ${examples.join(', ')}`,
      {
        hint: 'atk init --example quickstart',
      },
    );
  }
  const sources = await starterFiles(options.example, starter);
  const ownDir = sources.companions.length > 0;
  const target = resolve(options.path ?? (ownDir ? options.example : `${options.example}.yaml`));
  // A path without .yaml/.yml is a directory for every starter (as `promptfoo init my-experiment`),
  // so the schema file lands inside it, never loose beside it.
  const intoDir =
    ownDir || !/\.ya?ml$/i.test(target) || ((await stat(target).catch(() => undefined))?.isDirectory() ?? false);
  const recipePath = intoDir ? join(target, `${options.example}.yaml`) : target;
  const dir = dirname(recipePath);
  const schemaPath = join(dir, SCHEMA_FILE);
  const companions = sources.companions.map((file) => join(dir, basename(file)));
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
  await Promise.all(sources.companions.map((file, i) => copyFile(file, companions[i]!)));
  await writeFile(schemaPath, `${JSON.stringify(recipeJsonSchema(), null, 2)}\n`);
  await writeFile(
    recipePath,
    `# yaml-language-server: $schema=./${SCHEMA_FILE}\n${starterRecipe(sources.recipe, basename(recipePath))}`,
  );
  return { recipePath, schemaPath, companions };
}

/**
 * A starter `--example` names: a shipped recipe and the edits that let a copy of it work away from
 * recipes/, or a folder copied whole (paths are relative to the atk package). Generating each starter from
 * its shipped recipe keeps the two from drifting apart; an edit whose `from` text the recipe no
 * longer holds fails (init.test.ts writes every starter).
 */
export type Starter =
  | {
      /** The shipped recipe. */
      readonly recipe: string;
      /** `[from, to]`: text of the recipe that occurs once, and its replacement in the starter. */
      readonly edits?: readonly (readonly [from: string, to: string])[];
      /** Files written beside the starter. */
      readonly companions?: readonly string[];
    }
  | {
      /** A folder holding `<name>.yaml` and the files it reads. */
      readonly folder: string;
    };

/** `../models/tiny-arith` is relative to recipes/; a bare `models/...` is found beside the recipe, else in the atk package. */
const TINY_MODEL_ANYWHERE = [
  'path: ../models/tiny-arith           # relative to this file',
  'path: models/tiny-arith              # beside this file, else the copy inside the atk package',
] as const;

/** Every starter, by the name `--example` takes. */
export const STARTERS: Readonly<Record<string, Starter>> = {
  quickstart: { recipe: 'recipes/quickstart.yaml', edits: [TINY_MODEL_ANYWHERE] },
  gsm8k: { recipe: 'recipes/gsm8k-grpo.yaml' },
  deepcoder: { recipe: 'recipes/deepcoder-grpo.yaml' },
  tau2: { recipe: 'recipes/tau2-retail-grpo.yaml' },
  external: {
    recipe: 'recipes/external-agent.yaml',
    edits: [
      TINY_MODEL_ANYWHERE,
      [
        '(examples/external/agent.py beside this file, standard library only)',
        '(agent.py beside this file, standard library only)',
      ],
      ['command: [python3, examples/external/agent.py]', 'command: [python3, agent.py]'],
    ],
    companions: ['recipes/examples/external/agent.py'],
  },
  custom: { folder: 'recipes/examples/custom' },
};

/** The starters `--example` accepts. */
export function exampleNames(): string[] {
  return Object.keys(STARTERS).sort();
}

/** The starter's recipe text (with its edits made) and the files that go beside it. */
async function starterFiles(
  name: string,
  starter: Starter,
): Promise<{ readonly recipe: string; readonly companions: readonly string[] }> {
  const root = projectRoot();
  if ('folder' in starter) {
    const folder = join(root, starter.folder);
    const others = (await readdir(folder)).filter((f) => f !== `${name}.yaml`);
    return {
      recipe: await readFile(join(folder, `${name}.yaml`), 'utf8'),
      companions: others.map((f) => join(folder, f)),
    };
  }
  let recipe = await readFile(join(root, starter.recipe), 'utf8');
  for (const [from, to] of starter.edits ?? []) {
    // An internal error, not the user's: the shipped recipe changed under the edit (init.test.ts says so first).
    if (recipe.split(from).length !== 2) throw new Error(`${starter.recipe} holds '${from}' not exactly once`);
    recipe = recipe.replace(from, to);
  }
  return { recipe, companions: (starter.companions ?? []).map((f) => join(root, f)) };
}

/** The recipe with its launch comment (`# atk run recipes/x.yaml`, `# npx atk run ...`) naming the file it is written to. */
function starterRecipe(text: string, file: string): string {
  return text.replace(/^# (?:npx )?atk run \S+/m, `# atk run ${file}`);
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
    ['$0 init my-gsm8k.yaml --example gsm8k', 'a GSM8K recipe for vLLM on two GPUs'],
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
