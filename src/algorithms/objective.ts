/**
 * The objective a resolved recipe optimises, term by term (objective-terms.ts), with each setting's value and
 * where it came from: a recipe line, an override, the algorithm's preset, another key, or the schema default.
 */
import type { SourceLocation } from '../recipe/located.js';
import { PRESETS, type PresetSettings } from '../recipe/presets.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import { OBJECTIVE_TERMS, type TermState } from './objective-terms.js';

/** Where a setting's value came from. */
export type SettingOrigin =
  | { readonly kind: 'written'; readonly at: SourceLocation }
  | { readonly kind: 'preset'; readonly preset: string }
  | { readonly kind: 'derived'; readonly from: string }
  | { readonly kind: 'default' };

/** One setting of a term. */
export interface ExplainedSetting {
  readonly path: string;
  readonly value: unknown;
  readonly origin: SettingOrigin;
}

/** One term of the objective, stated for the recipe, with its settings. */
export interface ExplainedTerm extends TermState {
  readonly name: string;
  readonly settings: readonly ExplainedSetting[];
}

/**
 * Every objective term of `recipe`. `written(path)` says where a key was written (LoadedRecipe.written);
 * an unwritten key is a preset's, one another key decided, or the schema default.
 */
export function explainObjective(
  recipe: ResolvedRecipe,
  written: (path: string) => SourceLocation | undefined,
): ExplainedTerm[] {
  return OBJECTIVE_TERMS.map((term) => ({
    name: term.name,
    ...term.state(recipe),
    settings: term.settings(recipe).map((path) => ({
      path,
      value: valueAt(recipe, path),
      origin: originOf(recipe, path, written),
    })),
  }));
}

const PRESET_KEYS: ReadonlySet<string> = new Set<keyof PresetSettings>(
  Object.keys(PRESETS.grpo) as (keyof PresetSettings)[],
);

function originOf(
  recipe: ResolvedRecipe,
  path: string,
  written: (path: string) => SourceLocation | undefined,
): SettingOrigin {
  const at = written(path);
  if (at) return { kind: 'written', at };
  const [section, key] = path.split('.');
  if (section === 'algorithm' && key !== undefined && PRESET_KEYS.has(key))
    return { kind: 'preset', preset: recipe.algorithm.name };
  if (path.startsWith('algorithm.mismatch') && recipe.algorithm.mismatch) {
    if (written('algorithm.mismatch'))
      return path === 'algorithm.mismatch.low' || path === 'algorithm.mismatch.high'
        ? { kind: 'derived', from: `the default of mismatch.mode ${recipe.algorithm.mismatch.mode}` }
        : { kind: 'default' };
    if (written('algorithm.tis_cap')) return { kind: 'derived', from: 'algorithm.tis_cap (its older spelling)' };
    return { kind: 'derived', from: `rollout.max_staleness ${recipe.rollout.max_staleness} > 0` };
  }
  if (path === 'algorithm.group_size' && recipe.algorithm.name === 'greedy_sft')
    return { kind: 'derived', from: 'algorithm.name greedy_sft' };
  return { kind: 'default' };
}

function valueAt(recipe: ResolvedRecipe, path: string): unknown {
  let node: unknown = recipe;
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}
