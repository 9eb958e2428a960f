import { explainObjective, type ExplainedTerm, type SettingOrigin } from '../algorithms/objective.js';
import { loadRecipe } from '../recipe/index.js';
import { OVERRIDES_FILE } from '../recipe/overrides.js';
import { defineCommand } from './define-command.js';

/** Options of `atk explain`. */
export interface ExplainOptions {
  readonly recipe: string;
  readonly overrides: readonly string[];
  /** Print the terms as JSON instead of text. */
  readonly json: boolean;
}

/**
 * `atk explain`: load and validate a recipe, then state the objective it optimises, term by term: the formula
 * with its settings filled in, the paper, and each setting's value and where it came from.
 * @throws ConfigError listing every problem of the recipe (exit code 2).
 */
export async function runExplain(options: ExplainOptions): Promise<string> {
  const loaded = await loadRecipe(options.recipe, options.overrides);
  const terms = explainObjective(loaded.recipe, loaded.written);
  if (options.json) return `${JSON.stringify(terms, null, 2)}\n`;
  const { recipe } = loaded;
  const head = `${options.recipe}: ${recipe.name} optimises (algorithm ${recipe.algorithm.name})\n`;
  return head + terms.map((term) => formatTerm(term, options.overrides)).join('');
}

function formatTerm(term: ExplainedTerm, overrides: readonly string[]): string {
  const lines = [`\n${term.name}: ${term.summary}`];
  for (const f of term.formula) lines.push(`    ${f}`);
  if (term.paper) lines.push(`    from: ${term.paper}`);
  const width = Math.max(...term.settings.map((s) => s.path.length));
  for (const s of term.settings)
    lines.push(`  ${s.path.padEnd(width)}  ${formatValue(s.value).padEnd(14)}  ${formatOrigin(s.origin, overrides)}`);
  return `${lines.join('\n')}\n`;
}

function formatValue(value: unknown): string {
  if (value === undefined) return '-';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function formatOrigin(origin: SettingOrigin, overrides: readonly string[]): string {
  switch (origin.kind) {
    case 'written':
      return origin.at.file === OVERRIDES_FILE
        ? `override ${overrides[origin.at.line - 1] ?? origin.at.line}`
        : `${origin.at.file}:${origin.at.line}`;
    case 'preset':
      return `preset ${origin.preset}`;
    case 'derived':
      return `from ${origin.from}`;
    case 'default':
      return 'default';
  }
}

export const explainCommand = defineCommand({
  command: 'explain <recipe> [overrides..]',
  describe: 'Print the objective a recipe optimises: each term, its formula, paper, settings and where they came from',
  positionals: {
    recipe: { type: 'string', demandOption: true, describe: 'Recipe YAML file' },
    overrides: { type: 'string', array: true, describe: 'key.path=value overrides, parsed as YAML' },
  },
  options: {
    json: { type: 'boolean', default: false, describe: 'Print the terms as JSON' },
  },
  examples: [
    ['$0 explain recipes/quickstart.yaml', 'the quickstart objective'],
    ['$0 explain recipes/quickstart.yaml algorithm.name=gspo', 'the same recipe under GSPO'],
  ],
  handler: async (args) => {
    process.stdout.write(await runExplain({ recipe: args.recipe, overrides: args.overrides ?? [], json: args.json }));
  },
});
