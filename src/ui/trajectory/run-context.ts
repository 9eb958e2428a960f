import { readFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import { toChatTools } from '../../agent/index.js';
import { InputError } from '../../errors/index.js';
import { ToolSchema } from '../../recipe/schema.js';
import { loadModelTokenizer, type ChatTool, type ModelTokenizer } from '../../tokens/index.js';
import { toolComponent } from '../../tools/components.js';
import { tools as toolRegistry } from '../../tools/index.js';
import { RunDir } from '../../runs/index.js';
import { projectRoot } from '../../util/paths.js';

/** The parts of a run's resolved.yaml that the viewers need. */
const ResolvedPartsSchema = z.object({
  model: z.object({ path: z.string(), tokenizer: z.string().optional(), chat_template: z.string().optional() }),
  tools: z.array(z.unknown()).default([]),
  agent: z
    .object({ chat_template_kwargs: z.record(z.string(), z.unknown()).default({}) })
    .default({ chat_template_kwargs: {} }),
});

/** What a run directory says about its model, tools and template, read back for viewing. */
export interface RunModel {
  readonly runDir: string;
  /** Directory the recipe was in (relative paths of a hand-written resolved.yaml resolve against it). */
  readonly recipeDir: string;
  readonly modelDir: string;
  readonly tokenizerDir?: string;
  readonly chatTemplatePath?: string;
  readonly toolEntries: readonly unknown[];
  readonly chatTemplateKwargs: Readonly<Record<string, unknown>>;
}

/**
 * Reads resolved.yaml (and the manifest's `recipe_file`) of a run directory. `model.path` is absolute
 * in what `atk run` writes; a relative one resolves against the recipe's directory, then the run
 * directory, then the current directory, then the atk package (`models/tiny-arith`).
 * @throws InputError when resolved.yaml is missing or has no model.path.
 */
export async function readRunModel(runDir: string): Promise<RunModel> {
  const file = join(runDir, 'resolved.yaml');
  const text = await readFile(file, 'utf8').catch(() => {
    throw new InputError(`${file}: cannot read the run's resolved recipe`, {
      hint: 'pass --model <dir> to name the tokenizer directly',
    });
  });
  const parsed = ResolvedPartsSchema.safeParse(parse(text));
  if (!parsed.success)
    throw new InputError(`${file}: no model.path`, { hint: 'pass --model <dir> to name the tokenizer directly' });
  // A viewer also opens runs whose manifest is missing or unreadable: those resolve against the run itself.
  const recipeDir = (await new RunDir(runDir).recipeDir().catch(() => undefined)) ?? runDir;
  const place = (p: string): string => locate(p, [recipeDir, runDir, process.cwd(), projectRoot()]);
  const { model, tools, agent } = parsed.data;
  return {
    runDir,
    recipeDir,
    modelDir: place(model.path),
    ...(model.tokenizer ? { tokenizerDir: place(model.tokenizer) } : {}),
    ...(model.chat_template ? { chatTemplatePath: place(model.chat_template) } : {}),
    toolEntries: tools,
    chatTemplateKwargs: agent.chat_template_kwargs,
  };
}

/** The run's tokenizer and chat template. @throws InputError when the files are not there. */
export function runTokenizer(model: RunModel): Promise<ModelTokenizer> {
  return loadModelTokenizer(model.modelDir, {
    ...(model.tokenizerDir ? { tokenizerDir: model.tokenizerDir } : {}),
    ...(model.chatTemplatePath ? { chatTemplatePath: model.chatTemplatePath } : {}),
  });
}

/**
 * The tool specs the chat template rendered into the prompt, rebuilt from the recipe's tool entries
 * through the tool registry (MCP servers a tool starts are stopped again).
 * @throws ConfigError when a tool is not registered or rejects its options.
 */
export async function runToolSpecs(model: RunModel): Promise<ChatTool[]> {
  const closers: (() => Promise<void>)[] = [];
  const warnings: string[] = [];
  const ctx = {
    recipeDir: model.recipeDir,
    runDir: model.runDir,
    warn: (m: string) => void warnings.push(m),
    onClose: (fn: () => Promise<void>) => void closers.push(fn),
  };
  try {
    const specs = [];
    for (const entry of model.toolEntries) {
      const { name, options } = toolComponent(ToolSchema.parse(entry));
      const make = await (await toolRegistry.get(name)).create(options, ctx);
      const env = {
        episodeId: 'inspect',
        task: { id: 'inspect', prompt: '', data: {} },
        state: new Map<string, unknown>(),
        signal: new AbortController().signal,
      };
      specs.push(...make(env).map((t) => t.toolSpec));
    }
    return toChatTools(specs);
  } finally {
    await Promise.all(closers.map((close) => close().catch(() => undefined)));
  }
}

function locate(path: string, bases: readonly string[]): string {
  if (isAbsolute(path)) return path;
  for (const base of bases) if (existsSync(resolve(base, path))) return resolve(base, path);
  return resolve(bases[0]!, path);
}
