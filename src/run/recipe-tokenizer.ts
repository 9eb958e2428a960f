/**
 * The model's tokenizer and chat template as a recipe names them, and what the recipe needs of them
 * before a run starts: `agent.tool_call_format: auto` read off the template.
 */
import { engineKind } from '../policy/index.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import {
  AUTO_REASONING_HISTORY,
  AUTO_TOOL_CALL_FORMAT,
  loadModelTokenizer,
  type ModelTokenizer,
  resolveReasoningHistory,
  resolveToolCallFormat,
  type TokenizerOverrides,
} from '../tokens/index.js';

/** `model.tokenizer` and `model.chat_template` as the tokenizer loader takes them. */
export function tokenizerOverrides(recipe: ResolvedRecipe): TokenizerOverrides {
  return {
    ...(recipe.model.tokenizer ? { tokenizerDir: recipe.model.tokenizer } : {}),
    ...(recipe.model.chat_template ? { chatTemplatePath: recipe.model.chat_template } : {}),
  };
}

/**
 * The recipe's tokenizer, from where its engine kind finds the model (a local directory, or a hub id
 * in the Hugging Face cache). Memoised by the loader, so the session's later load costs nothing.
 * @throws TrainerError/InputError naming model.path when the model files are missing.
 */
export function recipeTokenizer(recipe: ResolvedRecipe, recipeDir: string): Promise<ModelTokenizer> {
  return loadModelTokenizer(engineKind(recipe).modelDir(recipe, recipeDir), tokenizerOverrides(recipe));
}

/**
 * The recipe with `agent.tool_call_format: auto` replaced by the format the model's chat template
 * writes, and `agent.reasoning_history: auto` by what the template does with earlier reasoning, as
 * resolved.yaml records them; any other setting is kept.
 * @throws InputError naming agent.tool_call_format when the template writes no format atk parses.
 */
export async function withToolCallFormat(recipe: ResolvedRecipe, recipeDir: string): Promise<ResolvedRecipe> {
  if (!readsTemplate(recipe)) return recipe;
  return resolvedFromTemplate(recipe, await recipeTokenizer(recipe, recipeDir));
}

/** Whether a setting is `auto`: agent.tool_call_format, agent.reasoning_history. */
function readsTemplate(recipe: ResolvedRecipe): boolean {
  return (
    recipe.agent.tool_call_format === AUTO_TOOL_CALL_FORMAT || recipe.agent.reasoning_history === AUTO_REASONING_HISTORY
  );
}

/** The recipe with every `auto` the template decides replaced by what it decides. */
function resolvedFromTemplate(recipe: ResolvedRecipe, tokenizer: ModelTokenizer): ResolvedRecipe {
  const { agent } = recipe;
  return {
    ...recipe,
    agent: {
      ...agent,
      tool_call_format: resolveToolCallFormat(agent.tool_call_format, tokenizer),
      reasoning_history: resolveReasoningHistory(agent.reasoning_history, tokenizer, agent.chat_template_kwargs),
    },
  };
}

/**
 * `withToolCallFormat` where the model files are on this machine; elsewhere (a hub id not yet
 * downloaded) the recipe is returned with `auto` as written, for `atk run` to resolve where it runs.
 * @throws InputError naming agent.tool_call_format when the template writes no format atk parses.
 */
export async function withToolCallFormatIfPresent(recipe: ResolvedRecipe, recipeDir: string): Promise<ResolvedRecipe> {
  if (!readsTemplate(recipe)) return recipe;
  let tokenizer: ModelTokenizer;
  try {
    tokenizer = await recipeTokenizer(recipe, recipeDir);
  } catch {
    return recipe;
  }
  return resolvedFromTemplate(recipe, tokenizer);
}
