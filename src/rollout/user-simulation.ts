import type { ConversationEnd, Task, UserSimulationHooks } from '../datasets/types.js';
// The simulators were written for tau2 but speak plain conversations; every multi-turn dataset uses them.
import {
  ChatUrlUser,
  EngineUser,
  isStopMessage,
  ScriptedUser,
  transcriptOf,
  type UserSimulator,
} from '../domains/tau2/index.js';
import type { Engine } from '../engines/index.js';
import { InputError } from '../errors/index.js';
import type { UserSimulatorConfig } from '../recipe/schema.js';
import type { ModelTokenizer } from '../tokens/index.js';
import type { EpisodeEnv } from '../tools/types.js';
import { hash32 } from '../util/random.js';

/** One episode's simulated user, in the form collectRollout hands to runEpisode. */
export interface EpisodeUser {
  /** The agent's fixed first line (environment tokens), when the dataset opens with one. */
  readonly opening?: string;
  /** The next user message for the conversation so far, or null when the conversation is over. */
  readonly respond: (conversation: readonly unknown[]) => Promise<string | null>;
  readonly maxSteps: number;
  readonly maxToolErrors: number;
  /** Told the episode's finish reason once it is over, so that a limit's ending is recorded too. */
  finish(finishReason: string): void;
}

/** The recipe's simulated user, started once for the run. */
export interface UserSimulation {
  /** The user of one episode. @throws InputError when a model-played user has no system prompt for the task. */
  forEpisode(task: Task, env: EpisodeEnv): EpisodeUser;
  /** Stops the user's own engine, if one was launched. */
  close(): Promise<void>;
}

export interface UserSimulationContext {
  /** The policy's engine and tokenizer (kind `policy` plays the user with them). */
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>>;
  /** The dataset's hooks; absent members take the defaults documented on {@link UserSimulationHooks}. */
  readonly hooks?: UserSimulationHooks;
  readonly recipeDir: string;
  /** Logs of a launched user engine go to `<runDir>/logs/user/`. */
  readonly runDir?: string;
  readonly seed: number;
  readonly requestTimeoutMs: number;
  /** Starts the user's own engine for `kind: engine` (the policy layer's startUserEngine). */
  readonly startEngine?: (config: UserSimulatorConfig) => Promise<UserEngine>;
}

const LIMIT_ENDINGS: Readonly<Record<string, ConversationEnd>> = {
  maxSteps: 'max_steps',
  maxToolErrors: 'too_many_errors',
};

/**
 * Starts the user the recipe's `user` section names: the policy's own engine (`policy`), a second
 * engine launched or attached by atk (`engine`), an OpenAI-compatible chat server (`url`), or a
 * script (`scripted`: the recipe's fixed messages, else the dataset's own scripted user, if it has one). Each episode's user then speaks only through the dataset's hooks: its system
 * prompt, the opening line, the stop test and where the ending is recorded.
 * @throws InputError for an engine user without `model`/`engine`, or with an embedded engine;
 * EngineStartError when a launched user engine does not start.
 */
export async function startUserSimulation(
  config: UserSimulatorConfig,
  ctx: UserSimulationContext,
): Promise<UserSimulation> {
  const hooks = ctx.hooks ?? {};
  const sampling = { temperature: config.temperature, maxTokens: config.max_tokens };
  const served = config.kind === 'engine' ? await startEngine(config, ctx) : undefined;
  const simulator = (systemPrompt: string, task: Task, env: EpisodeEnv): UserSimulator => {
    if (config.kind === 'scripted' && config.messages === undefined && hooks.scriptedUser)
      return hooks.scriptedUser(task, hash32(ctx.seed, task.id, env.episodeId));
    if (config.kind === 'scripted') return new ScriptedUser(config.messages ?? []);
    if (config.kind === 'url')
      return new ChatUrlUser({
        url: config.url ?? '',
        model: config.model ?? '',
        systemPrompt,
        sampling,
        timeoutMs: ctx.requestTimeoutMs,
      });
    const { engine, tokenizer } = served ?? ctx;
    return new EngineUser({
      engine,
      tokenizer,
      systemPrompt,
      sampling,
      ...(served ? {} : { chatTemplateKwargs: ctx.chatTemplateKwargs ?? {} }),
    });
  };
  const isStop = hooks.isStop ?? isStopMessage;
  return {
    close: async () => await served?.stop(),
    forEpisode(task, env) {
      const systemPrompt = hooks.systemPrompt ? hooks.systemPrompt(task) : stringField(task.data.user_system_prompt);
      if (systemPrompt === undefined && config.kind !== 'scripted') {
        throw new InputError(`task ${task.id}: no system prompt for the simulated user`, {
          hint: 'give each task data.user_system_prompt (a dataset column), or use user.kind: scripted',
        });
      }
      const user = simulator(systemPrompt ?? '', task, env);
      const opening = hooks.opening ? hooks.opening(task) : stringField(task.data.greeting);
      let ended = false;
      const end = (how: ConversationEnd): null => {
        ended = true;
        hooks.onEnd?.(how, env);
        return null;
      };
      return {
        ...(opening === undefined ? {} : { opening }),
        maxSteps: config.max_steps,
        maxToolErrors: config.max_errors,
        async respond(conversation) {
          const transcript = transcriptOf(conversation);
          const last = transcript.at(-1);
          if (last?.role === 'assistant' && isStop(last.text)) return end('agent_stop');
          const reply = await user.respond(transcript, env.signal);
          return isStop(reply) ? end('user_stop') : reply;
        },
        finish(finishReason) {
          const limit = LIMIT_ENDINGS[finishReason];
          if (!ended && limit) end(limit);
        },
      };
    },
  };
}

/** The user's own engine (`kind: engine`) and the tokenizer of the model it serves. */
export interface UserEngine {
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  stop(): Promise<void>;
}

function startEngine(config: UserSimulatorConfig, ctx: UserSimulationContext): Promise<UserEngine> {
  if (!ctx.startEngine) throw new Error('startUserSimulation: a kind engine user needs ctx.startEngine');
  return ctx.startEngine(config);
}

function stringField(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
