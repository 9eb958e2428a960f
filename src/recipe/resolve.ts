/**
 * From a validated recipe to the resolved one `atk run` uses and `resolved.yaml` records:
 * schema defaults (already filled by zod), the algorithm preset's settings, and file paths made
 * absolute against the file each value was written in.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { resolveAlgorithm, resolveRollout, type ResolvedAlgorithm } from './presets.js';
import { builtinChatTemplate } from '../tokens/builtin-templates.js';
import { projectRoot } from '../util/paths.js';
import type { KeyPath } from './located.js';
import { EngineSchema, POLICY_SUMMARIZER } from './schema.js';
import type { AgentConfig, Recipe, RewardComponentConfig, ToolConfig } from './schema.js';

/** A recipe with every default and preset setting filled in and its paths made absolute. */
export type ResolvedRecipe = Omit<Recipe, 'algorithm' | 'extends' | '$schema'> & {
  readonly algorithm: ResolvedAlgorithm;
};

/** Directory against which the relative path written at `path` resolves (its file's directory). */
export type BaseDirOf = (path: KeyPath) => string;

/**
 * Fill presets and resolve paths. `baseDir` is the recipe's directory, or a function giving the
 * directory of the file each key came from (values inherited through `extends` resolve against
 * the base file; command-line overrides against the current directory).
 *
 * Path rules: these are files relative to the recipe that writes them: `dataset.path`,
 * `dataset.split_by.file`, `model.chat_template`, `agent.system_prompt.file`, tool and reward
 * `module`s, a reward `command`'s executable when it is a path (`./grade.sh`; a bare name is looked
 * up on $PATH), and the `cwd` of a reward command and of a stdio MCP server (default: the directory
 * of the recipe that names it, so the command's arguments are found beside that recipe). `model.path`,
 * `model.tokenizer` and `agent.context.model` (unless `policy`) may also be hub ids: a value that is
 * absolute, starts with `./`, `../` or `~/`, or names an existing directory (beside the recipe, else in
 * the atk package, e.g. `models/tiny-arith`) becomes an absolute path; anything else is kept as a hub id.
 * `output.runs_dir` resolves against the current directory.
 */
export function resolveRecipe(recipe: Recipe, baseDir: string | BaseDirOf): ResolvedRecipe {
  const dirOf: BaseDirOf = typeof baseDir === 'string' ? () => baseDir : baseDir;
  const file = (value: string, path: KeyPath): string => resolvePath(value, dirOf(path));
  const { $schema: _schema, extends: _extends, ...rest } = recipe;
  const prompt = recipe.agent.system_prompt;
  const split = recipe.dataset.split_by;
  return {
    ...rest,
    model: {
      ...recipe.model,
      path: modelLocation(recipe.model.path, dirOf(['model', 'path'])),
      ...(recipe.model.tokenizer !== undefined && {
        tokenizer: modelLocation(recipe.model.tokenizer, dirOf(['model', 'tokenizer'])),
      }),
      ...(recipe.model.chat_template !== undefined && {
        chat_template:
          builtinChatTemplate(recipe.model.chat_template) ??
          file(recipe.model.chat_template, ['model', 'chat_template']),
      }),
    },
    dataset: {
      ...recipe.dataset,
      ...(recipe.dataset.path !== undefined && { path: file(recipe.dataset.path, ['dataset', 'path']) }),
      ...(split && 'file' in split && { split_by: { file: file(split.file, ['dataset', 'split_by', 'file']) } }),
    },
    agent: {
      ...recipe.agent,
      ...(typeof prompt === 'object' && {
        system_prompt: { file: file(prompt.file, ['agent', 'system_prompt', 'file']) },
      }),
      context: resolveContext(recipe.agent.context, dirOf(['agent', 'context', 'model'])),
    },
    tools: recipe.tools.map((tool, i) => resolveTool(tool, (value, key) => file(value, ['tools', i, ...key]))),
    reward: resolveRewardSource(
      {
        ...recipe.reward,
        ...(recipe.reward.components && {
          components: recipe.reward.components.map((c, i) =>
            resolveRewardSource(c, (value, key) => file(value, ['reward', 'components', i, ...key])),
          ),
        }),
      },
      (value, key) => file(value, ['reward', ...key]),
    ),
    algorithm: resolveAlgorithm(recipe.algorithm, recipe.rollout.max_staleness),
    rollout: resolveRollout(recipe.rollout, recipe.algorithm.name),
    output: { ...recipe.output, runs_dir: resolve(recipe.output.runs_dir) },
  };
}

/**
 * `agent.context` with a fixed summariser's location resolved as `model.path`'s is, and its engine
 * defaulted (embedded) so that resolved.yaml shows how it is served.
 */
function resolveContext(context: AgentConfig['context'], dir: string): AgentConfig['context'] {
  if (context.model === POLICY_SUMMARIZER) return context;
  return { ...context, model: modelLocation(context.model, dir), engine: context.engine ?? EngineSchema.parse({}) };
}

/** A path written at the key path `key` (below the component) made absolute. */
type ComponentFile = (value: string, key: KeyPath) => string;

function resolveTool(tool: ToolConfig, file: ComponentFile): ToolConfig {
  const { mcp } = tool;
  return {
    ...tool,
    ...(tool.module !== undefined && { module: file(tool.module, ['module']) }),
    ...(mcp && 'command' in mcp && { mcp: { ...mcp, cwd: file(mcp.cwd ?? '.', ['mcp', 'cwd']) } }),
  };
}

function resolveRewardSource<T extends Pick<RewardComponentConfig, 'module' | 'command' | 'cwd'>>(
  source: T,
  file: ComponentFile,
): T {
  const [executable, ...args] = source.command ?? [];
  return {
    ...source,
    ...(source.module !== undefined && { module: file(source.module, ['module']) }),
    ...(executable?.includes('/') && { command: [file(executable, ['command', 0]), ...args] }),
    ...(source.command !== undefined && { cwd: file(source.cwd ?? '.', ['cwd']) }),
  };
}

/** The resolved recipe as YAML, in schema key order: what `resolved.yaml` and `--resolved` show. */
export function resolvedYaml(recipe: ResolvedRecipe): string {
  return stringify(recipe, { lineWidth: 0 });
}

/** A model directory or a hub id; see resolveRecipe. */
export function modelLocation(value: string, dir: string): string {
  if (isAbsolute(value) || /^(\.{1,2}|~)[/\\]/.test(value)) return resolvePath(value, dir);
  const besideRecipe = resolve(dir, value);
  if (existsSync(besideRecipe)) return besideRecipe;
  const shipped = join(projectRoot(), value);
  if (existsSync(shipped)) return shipped;
  return value;
}

function resolvePath(value: string, dir: string): string {
  if (value === '~' || value.startsWith('~/')) return join(homedir(), value.slice(1));
  return resolve(dir, value);
}
