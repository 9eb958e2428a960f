/** The recipe's component sections: dataset, tools, agent and reward. */
import { z } from 'zod';
import { AUTO_TOOL_CALL_FORMAT } from '../tokens/tool-call-format.js';
import { toolCallParsers } from '../tokens/tool-calls/index.js';
import { EngineSchema } from './model-schema.js';
import { OverlongSchema } from './objective-schemas.js';
import { componentOptions, exactlyOne, positiveInt, positiveNumber } from './schema-parts.js';

const DatasetFieldsSchema = z.strictObject({
  prompt: z
    .string()
    .min(1)
    .default('prompt')
    .describe('Column holding the first user message (used when there is no prompt_template).'),
  answer: z.string().min(1).optional().describe('Column holding the reference answer the reward compares with.'),
  id: z
    .string()
    .min(1)
    .optional()
    .describe('Column holding a stable task id; default: row-N (the row number in the file).'),
  metadata: z
    .array(z.string().min(1))
    .optional()
    .describe('Columns kept in task.data for tools, rewards and {{placeholders}}; default: every column.'),
});

export const DatasetSplitSchema = z.union([
  z.strictObject({ field: z.string().min(1).describe("Column whose value names the row's split (e.g. train, test).") }),
  z.strictObject({
    file: z.string().min(1).describe('Second data file holding the eval_split rows; path holds the split rows.'),
  }),
  z.strictObject({
    fraction: z.number().gt(0).lt(1).describe('Share of rows held out (seeded) as eval_split; the rest are split.'),
  }),
]);

export const CurriculumSchema = z
  .strictObject({
    skip_solved: positiveInt
      .optional()
      .describe(
        'Skip a task once each of its last K groups was solved (every episode reached reward.success_threshold).',
      ),
    skip_unsolved: positiveInt
      .optional()
      .describe('Skip a task once none of the episodes of its last K groups reached reward.success_threshold.'),
  })
  .refine((c) => c.skip_solved !== undefined || c.skip_unsolved !== undefined, {
    message: 'needs skip_solved or skip_unsolved',
  });

export const DatasetSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .default('file')
      .describe(
        'Registered dataset: arith, helpdesk, gsm8k, deepcoder, tau2, or file (a .jsonl/.json/.csv/.parquet at path).',
      ),
    path: z
      .string()
      .optional()
      .describe(
        "Data file or directory; relative paths resolve against the recipe. Default: the dataset's own location.",
      ),
    split: z.string().default('train').describe('Split used for training.'),
    eval_split: z.string().default('test').describe('Split used for evaluation.'),
    limit: positiveInt.optional().describe('Use at most this many training tasks (after seeded shuffling).'),
    eval_limit: positiveInt.optional().describe('Use at most this many evaluation tasks (a fixed, seeded subset).'),
    options: componentOptions.default({}).describe('Dataset-specific options (e.g. arith difficulty, tau2 domain).'),
    curriculum: CurriculumSchema.optional().describe(
      'Training tasks the data stream passes over from their outcomes: {skip_solved: K} drops a task whose last K groups were all solved, skip_unsolved: K one whose last K were all unsolved. Kept with each checkpoint, so a resume skips the same; metrics curriculum/skipped_solved and skipped_unsolved per step. Absent = every task, every epoch.',
    ),
    format: z
      .enum(['jsonl', 'json', 'csv', 'parquet'])
      .optional()
      .describe('file: format of path; default from its extension (.jsonl, .json, .csv, .parquet).'),
    fields: DatasetFieldsSchema.optional().describe(
      'file: which columns of each row are the prompt, the answer, the id and the metadata.',
    ),
    prompt_template: z
      .string()
      .optional()
      .describe(
        'file: first user message with {{column}} placeholders filled from each row; default: the prompt column as is.',
      ),
    split_by: DatasetSplitSchema.optional().describe(
      'file: how rows divide into split and eval_split: {field: column} (rows whose column equals the split name), {file: path} (eval rows in a second file), or {fraction: 0.1} (a seeded held-out share). Absent: every split is the whole file.',
    ),
  })
  .describe('Where tasks come from.');

export const McpServerSchema = z.union([
  z.strictObject({
    command: z
      .string()
      .min(1)
      .describe('Executable that starts the MCP server over stdio (started with the run, stopped after it).'),
    args: z.array(z.string()).default([]).describe('Arguments of the server command.'),
    env: z.record(z.string(), z.string()).optional().describe('Extra environment variables for the server process.'),
    cwd: z
      .string()
      .optional()
      .describe('Working directory of the server process, relative to the recipe; default: the recipe directory.'),
  }),
  z.strictObject({
    url: z.string().url().describe('URL of a running MCP server (streamable HTTP).'),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe('HTTP headers sent with every request (e.g. authorization).'),
  }),
]);

export const ToolSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .optional()
      .describe('Registered tool name, e.g. calculator, run_python (or give module or mcp).'),
    options: componentOptions.default({}).describe('Options for this tool.'),
    module: z
      .string()
      .min(1)
      .optional()
      .describe(
        'TypeScript or JavaScript file, relative to the recipe, exporting Strands tools (tool() from @strands-agents/sdk).',
      ),
    export: z
      .string()
      .min(1)
      .optional()
      .describe(
        'module: the export holding a tool, an array of tools, or a function (env) => tools called per episode; default: every exported tool.',
      ),
    mcp: McpServerSchema.optional().describe(
      'An MCP server whose tools the agent gets: {command, args, env, cwd} (stdio) or {url} (HTTP).',
    ),
    prefix: z
      .string()
      .min(1)
      .optional()
      .describe('mcp: prefix added to every tool name as <prefix>_<tool>, to avoid clashes.'),
    timeout_s: positiveNumber
      .default(60)
      .describe('Seconds one call of these tools may take; a slower call becomes an error result the model sees.'),
  })
  .superRefine(exactlyOne(['name', 'module', 'mcp'], 'a tool'))
  .describe('One tool the agent may call: a registered name, a module of your own, or an MCP server.');

const PromptSchema = z.union([
  z.string(),
  z.strictObject({ file: z.string().min(1).describe('File holding the prompt text, relative to the recipe.') }),
]);

export const ExternalAgentSchema = z
  .union([
    z.strictObject({
      command: z
        .array(z.string().min(1))
        .min(1)
        .describe(
          'Program run once per episode, e.g. [python3, my_agent.py]: OPENAI_BASE_URL, OPENAI_API_KEY and ATK_EPISODE_ID in its environment, the task as JSON on stdin, optionally a JSON result as the last stdout line.',
        ),
      cwd: z
        .string()
        .min(1)
        .optional()
        .describe('Working directory, relative to the recipe; default: the recipe directory.'),
      env: z.record(z.string(), z.string()).default({}).describe('Extra environment variables for the agent.'),
      timeout_s: positiveNumber
        .optional()
        .describe('Seconds one run may take (the process group is killed after); default: rollout.episode_timeout_s.'),
    }),
    z.strictObject({
      url: z
        .string()
        .url()
        .describe(
          'A running agent server atk POSTs {task, base_url, api_key, episode_id} to per episode; its JSON answer is the result.',
        ),
      timeout_s: positiveNumber
        .optional()
        .describe('Seconds one request may take; default: rollout.episode_timeout_s.'),
    }),
  ])
  .describe(
    "Your own agent instead of the built-in one: it reaches the model through atk's OpenAI-compatible gateway, which records the exact tokens.",
  );

const toolCallFormats = Object.keys(toolCallParsers) as [string, ...string[]];

/** `agent.context.model` naming the policy itself as the summariser. */
export const POLICY_SUMMARIZER = 'policy';

/** agent.context: what the built-in agent does once a prompt passes its budget. */
const ContextSchema = z
  .strictObject({
    strategy: z
      .enum(['none', 'sliding_window', 'summarize'])
      .default('none')
      .describe(
        'none: the episode ends when it passes agent.max_total_tokens; sliding_window: keep the system prompt, the task and the last turns; summarize: the same, with a summary of what was dropped, written by the policy (trained) or by agent.context.model (not trained). Each rewrite starts a new trajectory segment.',
      ),
    budget_tokens: positiveInt
      .optional()
      .describe('Prompt tokens that trigger a rewrite; default: agent.max_total_tokens minus agent.max_new_tokens.'),
    keep_last_turns: positiveInt
      .default(4)
      .describe(
        'Most turns (a reply and the tool results or user message after it) a rewrite keeps; fewer when they do not fit.',
      ),
    drop: z
      .enum(['turns', 'tool_results'])
      .default('turns')
      .describe('tool_results: blank the oldest tool results first (every call stays visible), then drop turns.'),
    summary_prompt: z
      .string()
      .min(1)
      .default(
        'Summarise the conversation so far for yourself: the task, what you found, what you did and what is left. Reply with the summary only.',
      )
      .describe('summarize: the user message that asks for the summary.'),
    max_summary_tokens: positiveInt.default(256).describe('summarize: most tokens of the summary.'),
    model: z
      .string()
      .min(1)
      .default(POLICY_SUMMARIZER)
      .describe(
        'summarize: who writes the summary. policy: the policy itself (its tokens trained, one more model turn). Else a fixed model, never trained: a model directory (relative to the recipe) or, served by vllm/sglang/url, a hub id; it answers greedily and its summary enters the episode as environment text (loss mask 0).',
      ),
    engine: EngineSchema.optional().describe(
      "How agent.context.model is served: embedded (the default; a second trainer process that only generates, with model.trainer's device and threads), vllm, sglang (launched beside the policy's) or url (a running server).",
    ),
  })
  .describe('Context management of the built-in agent for episodes that outgrow the window.');

export const AgentSchema = z
  .strictObject({
    external: ExternalAgentSchema.optional(),
    system_prompt: PromptSchema.optional().describe(
      'System prompt, inline or {file: path}; {{field}} placeholders take task fields.',
    ),
    max_turns: positiveInt.default(4).describe('Most model calls per episode.'),
    max_new_tokens: positiveInt.default(512).describe('Most tokens generated per model call.'),
    max_tool_calls_per_turn: positiveInt
      .default(8)
      .describe(
        'Most tool calls one model reply may make; the calls past it are not run and each gets an error result (counted as too_many_calls). 8 leaves room for a turn of parallel lookups while a reply of hundreds of calls cannot run hundreds of tools or swell the next prompt.',
      ),
    max_total_tokens: positiveInt
      .optional()
      .describe('Most tokens in a whole episode (prompt included); default: the engine max_model_len.'),
    tool_call_format: z
      .enum([AUTO_TOOL_CALL_FORMAT, ...toolCallFormats])
      .default(AUTO_TOOL_CALL_FORMAT)
      .describe(
        "How tool calls are written in the model output; auto reads it off the model's chat template (resolved.yaml names the format found) and refuses a template it does not recognise.",
      ),
    chat_template_kwargs: componentOptions
      .default({})
      .describe('Extra chat template variables, e.g. {enable_thinking: false}.'),
    reasoning_history: z
      .enum(['auto', 'keep', 'strip'])
      .default('auto')
      .describe(
        "Earlier turns' reasoning in later prompts. strip: each prompt is rendered as the chat template renders it (Qwen3 drops the <think> of turns before the last user message), and the episode continues in a new trajectory segment wherever that prompt does not extend the last; keep: append-only, the reasoning stays. auto reads it off the template (resolved.yaml names it).",
      ),
    context: ContextSchema.prefault({}),
  })
  .describe('The agent loop around the model.');

export const JudgeSchema = z.strictObject({
  url: z
    .string()
    .url()
    .describe('Base URL of an OpenAI-compatible server including /v1 (POST <url>/chat/completions).'),
  model: z.string().min(1).describe('Model name sent in requests.'),
  rubric: z
    .string()
    .min(1)
    .describe('What a good answer is; the judge replies with SCORE: <number> between 0 and max_score.'),
  max_score: positiveNumber
    .default(1)
    .describe("Top of the judge's scale; the reward is the parsed score divided by it."),
  api_key_env: z
    .string()
    .min(1)
    .optional()
    .describe('Environment variable holding the API key sent as a bearer token.'),
  temperature: z.number().nonnegative().default(0).describe('Judge sampling temperature (0 keeps scores repeatable).'),
  max_tokens: positiveInt.default(256).describe("Most tokens in the judge's reply."),
  timeout_s: positiveNumber.default(60).describe('Seconds one judge request may take.'),
});

/** The ways of naming one reward: registered, a module function, a command, or an LLM judge. */
const rewardSourceKeys = {
  module: z
    .string()
    .min(1)
    .optional()
    .describe(
      'TypeScript or JavaScript file, relative to the recipe, exporting a reward function (outcome) => number | {part: number}.',
    ),
  export: z.string().min(1).optional().describe('module: name of the exported function; default: the default export.'),
  command: z
    .array(z.string())
    .min(1)
    .optional()
    .describe('Command run per episode: the episode as JSON on stdin, a number or JSON on stdout.'),
  cwd: z
    .string()
    .min(1)
    .optional()
    .describe(
      "command: working directory, relative to the recipe that names the command; default: that recipe's directory (so `[python3, grade.py]` finds grade.py beside it).",
    ),
  timeout_s: positiveNumber.default(30).describe('command: seconds one scoring may take.'),
  judge: JudgeSchema.optional().describe(
    'An LLM judge on an OpenAI-compatible URL scoring the final answer against a rubric.',
  ),
};

export const RewardComponentSchema = z
  .strictObject({
    name: z.string().min(1).optional().describe('Registered reward name (or give module, command or judge).'),
    weight: z.number().default(1).describe('Weight of this component in the sum.'),
    options: componentOptions.default({}).describe('Options for this reward.'),
    label: z
      .string()
      .min(1)
      .optional()
      .describe("Name this component's part is logged under; default: the reward name, export, script or judge."),
    ...rewardSourceKeys,
  })
  .superRefine(exactlyOne(['name', 'module', 'command', 'judge'], 'a reward component'));

export const RewardSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .optional()
      .describe('Registered reward: math_answer, code_tests, tau2, ... (or module, command, judge, components).'),
    options: componentOptions.default({}).describe('Options for the named reward.'),
    ...rewardSourceKeys,
    components: z
      .array(RewardComponentSchema)
      .optional()
      .describe('Weighted sum of several rewards; each part is logged.'),
    success_threshold: z
      .number()
      .default(1)
      .describe('An episode with reward >= this counts as a success (accuracy, filtered SFT).'),
    overlong: OverlongSchema.optional(),
  })
  .superRefine(exactlyOne(['name', 'module', 'command', 'judge', 'components'], 'the reward', true))
  .describe('How a finished episode is scored.');
