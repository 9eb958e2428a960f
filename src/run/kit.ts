import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { DatasetDefinition, Task } from '../datasets/types.js';
import type { Engine } from '../engines/types.js';
import { InputError } from '../errors/index.js';
import type { Recipe } from '../recipe/schema.js';
import { startExternalAgents, type ExternalAgents } from '../gateway/external-episode.js';
import { composeReward, type ComposedReward } from '../rewards/compose.js';
import { type ModelTokenizer, resolveReasoningHistory, resolveToolCallFormat } from '../tokens/index.js';
import type { ContextSummarizer } from '../agent/context-summarizer.js';
import type { ContextPolicy } from '../agent/long-episode.js';
import { tools as toolRegistry } from '../tools/index.js';
import { toolComponent } from '../tools/components.js';
import { guardEpisodeTools } from '../tools/guard.js';
import type { EpisodeTools } from '../tools/types.js';
import { fillPlaceholders } from '../util/template.js';
import { builtInEpisodes, type EpisodeKit, externalEpisodes } from '../rollout/collect.js';
import { rolloutTimeoutsMs, type ServingFacts } from '../policy/rollout-timeouts.js';
import { startUserEngine } from '../policy/user-engine.js';
import { type RunningContextModel, usesContextModel } from '../policy/context-model.js';
import { startUserSimulation, type UserSimulation } from '../rollout/user-simulation.js';

export interface KitContext {
  readonly recipe: Recipe;
  readonly recipeDir: string;
  readonly recipeFile: string;
  readonly runDir?: string;
  readonly dataset: DatasetDefinition;
  readonly engine: Engine;
  /** What the policy's engine says about itself (kind, device, size): `auto` rollout timeouts scale by it. */
  readonly serving?: ServingFacts;
  readonly tokenizer: ModelTokenizer;
  /**
   * Starts `agent.context.model`, the fixed summariser (the policy layer's startContextModel, which needs
   * the resolved recipe and the logs directory); needed only when the recipe names one.
   */
  readonly startContextModel?: () => Promise<RunningContextModel | undefined>;
  warn(message: string): void;
}

/**
 * Everything an episode needs that is fixed for the run, built from the recipe: tools, reward,
 * system prompt, limits, the simulated user when the recipe has a `user` section, and agent.context.model's
 * summariser when it names one. Training and evaluation share it. Every tool call is limited to its
 * entry's `timeout_s`. Call `kit.close()` when the run ends: it stops MCP servers the tools started
 * and a user or summariser engine it started.
 * @throws ConfigError for unknown tools or rewards; InputError for an unreadable prompt file or an
 * unusable `user` section or summariser directory; EngineStartError/TrainerError when a user or
 * summariser engine does not start.
 */
export async function buildEpisodeKit(ctx: KitContext): Promise<EpisodeKit> {
  const { recipe } = ctx;
  const toolCallFormat = resolveToolCallFormat(recipe.agent.tool_call_format, ctx.tokenizer);
  const template = await systemPromptTemplate(recipe, ctx.recipeDir, ctx.dataset);
  const tools: EpisodeTools[] = [];
  const closers: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    await Promise.allSettled(closers.splice(0).map((fn) => fn()));
  };
  const toolContext = {
    recipeDir: ctx.recipeDir,
    ...(ctx.runDir ? { runDir: ctx.runDir } : {}),
    warn: ctx.warn,
    onClose: (fn: () => Promise<void>) => void closers.push(fn),
  };
  const timeouts = rolloutTimeoutsMs(recipe.rollout, ctx.serving);
  let reward: ComposedReward;
  let user: UserSimulation | undefined;
  let external: ExternalAgents | undefined;
  let summarizer: ContextSummarizer | undefined;
  try {
    for (const tool of recipe.tools) {
      const { name, options } = toolComponent(tool);
      const definition = await toolRegistry.get(name);
      tools.push(guardEpisodeTools(await definition.create(options, toolContext), tool.timeout_s * 1000));
    }
    reward = await composeReward(recipe.reward, { recipeDir: ctx.recipeDir, warn: ctx.warn }, ctx.recipeFile);
    if (recipe.user) {
      user = await startUserSimulation(recipe.user, {
        engine: ctx.engine,
        tokenizer: ctx.tokenizer,
        chatTemplateKwargs: recipe.agent.chat_template_kwargs,
        ...(ctx.dataset.userSimulation ? { hooks: ctx.dataset.userSimulation } : {}),
        recipeDir: ctx.recipeDir,
        ...(ctx.runDir ? { runDir: ctx.runDir } : {}),
        seed: recipe.seed,
        requestTimeoutMs: timeouts.request,
        startEngine: (config) =>
          startUserEngine(config, {
            recipeDir: ctx.recipeDir,
            ...(ctx.runDir ? { runDir: ctx.runDir } : {}),
            seed: recipe.seed,
            requestTimeoutMs: timeouts.request,
          }),
      });
      const started = user;
      closers.push(() => started.close());
    }
    if (usesContextModel(recipe)) {
      if (!ctx.startContextModel) throw new Error('buildEpisodeKit: agent.context.model needs ctx.startContextModel');
      const started = await ctx.startContextModel();
      if (started) closers.push(() => started.close());
      summarizer = started?.summarizer;
    }
    if (recipe.agent.external) {
      const { agent } = recipe;
      const maxTotalTokens = agent.max_total_tokens ?? recipe.model.engine.max_model_len;
      const gateway = (external = await startExternalAgents({
        config: recipe.agent.external,
        recipeDir: ctx.recipeDir,
        engine: ctx.engine,
        tokenizer: ctx.tokenizer,
        maxTurns: agent.max_turns,
        maxNewTokens: agent.max_new_tokens,
        ...(maxTotalTokens === undefined ? {} : { maxTotalTokens }),
        maxToolCallsPerTurn: agent.max_tool_calls_per_turn,
        chatTemplateKwargs: agent.chat_template_kwargs,
        toolCallFormat,
      }));
      closers.push(() => gateway.close());
    }
  } catch (error) {
    // An MCP server started by an earlier tool must not outlive a failed build.
    await close();
    throw error;
  }
  return {
    close,
    engine: ctx.engine,
    tokenizer: ctx.tokenizer,
    tools,
    reward,
    agent: {
      maxTurns: recipe.agent.max_turns,
      maxNewTokens: recipe.agent.max_new_tokens,
      maxTotalTokens: recipe.agent.max_total_tokens ?? recipe.model.engine.max_model_len,
      maxToolCallsPerTurn: recipe.agent.max_tool_calls_per_turn,
      chatTemplateKwargs: recipe.agent.chat_template_kwargs,
      toolCallFormat,
      reasoningHistory: resolveReasoningHistory(
        recipe.agent.reasoning_history,
        ctx.tokenizer,
        recipe.agent.chat_template_kwargs,
      ),
      context: contextPolicy(recipe, summarizer),
    },
    systemPrompt: (task) => (template === undefined ? undefined : fillTemplate(template, task)),
    successThreshold: recipe.reward.success_threshold,
    ...(recipe.reward.overlong ? { overlong: recipe.reward.overlong } : {}),
    timeoutMs: timeouts.episode,
    rewardTimeoutMs: recipe.rollout.reward_timeout_s * 1000,
    ...(user ? { user: user.forEpisode.bind(user) } : {}),
    runner: external ? externalEpisodes(external) : builtInEpisodes,
  };
}

/**
 * `agent.context` as the built-in agent takes it: the budget defaults to what leaves one full reply
 * within agent.max_total_tokens (or the engine's max_model_len); `summarizer` is agent.context.model started.
 */
function contextPolicy(recipe: Recipe, summarizer: ContextSummarizer | undefined): ContextPolicy {
  const { context, max_new_tokens } = recipe.agent;
  if (context.strategy === 'none') return { strategy: 'none' };
  const total = recipe.agent.max_total_tokens ?? recipe.model.engine.max_model_len;
  const budget = context.budget_tokens ?? (total === undefined ? undefined : Math.max(1, total - max_new_tokens));
  if (budget === undefined) return { strategy: 'none' };
  return {
    strategy: context.strategy,
    budgetTokens: budget,
    keepLastTurns: context.keep_last_turns,
    drop: context.drop,
    summaryPrompt: context.summary_prompt,
    maxSummaryTokens: context.max_summary_tokens,
    ...(summarizer ? { summarizer } : {}),
  };
}

async function systemPromptTemplate(
  recipe: Recipe,
  recipeDir: string,
  dataset: DatasetDefinition,
): Promise<string | undefined> {
  const prompt = recipe.agent.system_prompt;
  if (prompt === undefined) return dataset.systemPrompt;
  if (typeof prompt === 'string') return prompt;
  const path = resolve(recipeDir, prompt.file);
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new InputError(
      `agent.system_prompt.file: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
}

/** Replace `{{field}}` with the task's field (id, prompt, answer, or any key of task.data); unknown fields stay as written. */
export function fillTemplate(template: string, task: Task): string {
  return fillPlaceholders(template, (key) =>
    key === 'id' ? task.id : key === 'prompt' ? task.prompt : key === 'answer' ? task.answer : task.data[key],
  );
}
