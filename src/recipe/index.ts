/** Recipes: the schema, loading with located errors, `extends`, overrides, resolution, JSON Schema. */
export * from './schema.js';
export { loadRecipe, parseKeyPath, type LoadedRecipe, type LoadRecipeOptions } from './load.js';
export { resolveRecipe, resolvedYaml, modelLocation, type ResolvedRecipe, type BaseDirOf } from './resolve.js';
export {
  addOptionsCheck,
  addRecipeCheck,
  checkRecipe,
  type ComponentOptionsFailure,
  type OptionsCheck,
  type RecipeCheck,
  type RecipeCheckContext,
  type RecipeProblem,
} from './checks.js';
export { recipeJsonSchema, type JsonSchemaNode } from './json-schema.js';
export { recipeReference, referenceMarkdown, REFERENCE_BEGIN, REFERENCE_END, type ReferenceRow } from './reference.js';
export { OVERRIDES_FILE } from './overrides.js';
export type { SourceLocation } from './located.js';
