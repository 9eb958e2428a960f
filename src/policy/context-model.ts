/**
 * `agent.context.model`: the fixed model, never trained, that writes the summaries of
 * `agent.context.strategy: summarize` instead of the policy. It starts as every fixed model does
 * (fixed-model.ts); its recipe check refuses the combinations that would leave it unused or cannot start it
 * before any run directory is made.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ContextSummarizer } from '../agent/context-summarizer.js';
import { InputError } from '../errors/index.js';
import type { RecipeCheckContext, RecipeProblem } from '../recipe/checks.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import { POLICY_SUMMARIZER } from '../recipe/schema.js';
import { loadModelTokenizer } from '../tokens/index.js';
import { resolveModelDir } from './embedded-policy.js';
import { isEmbeddedEngine, startFixedModel } from './fixed-model.js';
import { engineKindOf } from './index.js';
import type { StartPolicyOptions } from './policy.js';
import { servingModelDir } from './user-engine.js';

/** A started summariser: what the agent asks, and how to stop it. */
export interface RunningContextModel {
  readonly summarizer: ContextSummarizer;
  close(): Promise<void>;
}

/** Whether the recipe names a fixed summariser (`agent.context.model` other than `policy`). */
export function usesContextModel(recipe: Pick<ResolvedRecipe, 'agent'>): boolean {
  const { context } = recipe.agent;
  return context.strategy === 'summarize' && context.model !== POLICY_SUMMARIZER;
}

/**
 * Starts the recipe's fixed summariser (undefined when the policy summarises), after reading its
 * tokenizer, so that a model without one fails in a second rather than after its engine loaded. Its logs
 * go to logs/context-model/.
 * @throws InputError when an embedded summariser's directory holds no model; TrainerError/EngineStartError
 * when its engine does not start.
 */
export async function startContextModel(
  options: Pick<StartPolicyOptions, 'recipe' | 'recipeDir' | 'logsDir' | 'runDir' | 'signal'>,
): Promise<RunningContextModel | undefined> {
  const { recipe, recipeDir } = options;
  const { model, engine } = recipe.agent.context;
  if (!usesContextModel(recipe) || engine === undefined) return undefined;
  const modelDir = isEmbeddedEngine(engine) ? embeddedModelDir(model, recipeDir) : servingModelDir(model, recipeDir);
  const tokenizer = await loadModelTokenizer(modelDir);
  const fixed = await startFixedModel(
    {
      path: model,
      modelDir,
      engine,
      servedModelName: 'context-model',
      what: 'agent.context.engine.kind',
      logsName: 'context-model',
    },
    options,
  );
  return {
    summarizer: { engine: fixed.engine, tokenizer, maxModelLen: engine.max_model_len },
    close: () => fixed.close(),
  };
}

/** @throws InputError naming agent.context.model when `model` holds no Hugging Face model. */
function embeddedModelDir(model: string, recipeDir: string): string {
  try {
    return resolveModelDir(model, recipeDir);
  } catch {
    throw new InputError(`agent.context.model: no config.json in ${resolve(recipeDir, model)}`, {
      hint: 'the embedded engine loads a local Hugging Face directory; serve a hub model with agent.context.engine.kind vllm, sglang or url',
    });
  }
}

/**
 * The recipe's summariser settings that would do nothing or cannot start (a recipe check): a fixed model
 * without `strategy: summarize` or beside an external agent, an engine without a fixed model, a url engine without its url, an
 * embedded one without a local model, and rollout workers that would each start their own.
 */
export function contextModelProblems(
  recipe: Pick<ResolvedRecipe, 'agent' | 'rollout'>,
  where: RecipeCheckContext,
): RecipeProblem[] {
  const { context } = recipe.agent;
  const fixed = context.model !== POLICY_SUMMARIZER;
  if (fixed && context.strategy !== 'summarize')
    return [
      {
        path: 'agent.context.model',
        message: `only agent.context.strategy summarize asks a model for a summary (this recipe's strategy is ${context.strategy})`,
      },
    ];
  if (fixed && recipe.agent.external)
    return [
      {
        path: 'agent.context.model',
        message:
          'agent.external keeps its own conversation; the built-in agent that asks agent.context.model never runs (remove it)',
      },
    ];
  const { engine } = context;
  if (!fixed && engine !== undefined)
    return [
      {
        path: 'agent.context.engine',
        message:
          'serves agent.context.model, which is the policy here: name the fixed model (agent.context.model: <path>) or remove it',
      },
    ];
  if (!fixed || engine === undefined) return [];
  if (engine.kind === 'url' && engine.url === undefined)
    return [{ path: 'agent.context.engine.kind', message: 'kind url needs agent.context.engine.url' }];
  const local = resolve(where.dir, context.model);
  if (isEmbeddedEngine(engine) && !existsSync(join(local, 'config.json')))
    return [
      {
        path: 'agent.context.model',
        message: `no config.json in ${local}: the embedded engine loads a local Hugging Face directory (serve a hub model with agent.context.engine.kind vllm, sglang or url)`,
      },
    ];
  if (recipe.rollout.workers > 0 && (isEmbeddedEngine(engine) || engineKindOf(engine).launched))
    return [
      {
        path: 'rollout.workers',
        message: `each rollout worker would start its own ${engine.kind} engine for agent.context.model; attach one by URL (agent.context.engine.kind: url) or set rollout.workers: 0`,
      },
    ];
  return [];
}
