import { writeFile } from 'node:fs/promises';
import { recipeJsonSchema, referenceMarkdown } from '../recipe/index.js';
import { defineCommand } from './define-command.js';

/** Options of `atk schema`. */
export interface SchemaOptions {
  /** Write to this file instead of returning the text. */
  readonly out?: string;
  /** The Markdown recipe reference (as in docs/recipes.md) instead of JSON Schema. */
  readonly reference: boolean;
}

/** `atk schema`: the recipe JSON Schema (or the Markdown reference); written to `out` when given. */
export async function runSchema(options: SchemaOptions): Promise<string> {
  const text = options.reference ? `${referenceMarkdown()}\n` : `${JSON.stringify(recipeJsonSchema(), null, 2)}\n`;
  if (options.out === undefined) return text;
  await writeFile(options.out, text);
  return `wrote ${options.out}\n`;
}

export const schemaCommand = defineCommand({
  command: 'schema',
  describe: 'Print the recipe JSON Schema (generated from the zod schema) for editors and tools',
  options: {
    out: { type: 'string', describe: 'Write to this file' },
    reference: { type: 'boolean', default: false, describe: 'Print the Markdown recipe reference instead' },
  },
  examples: [
    [
      '$0 schema --out recipe.schema.json',
      'save the schema; point "# yaml-language-server: $schema=recipe.schema.json" at it',
    ],
    ['$0 schema --reference', 'every recipe key with type, default and meaning'],
  ],
  handler: async (args) => {
    process.stdout.write(
      await runSchema({ ...(args.out !== undefined && { out: args.out }), reference: args.reference }),
    );
  },
});
