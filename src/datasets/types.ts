import type { DatasetConfig } from '../recipe/schema.js';
import type { ComponentOptionsSchema } from '../util/component-options.js';

/** One task an episode is run on, normalised across every dataset. */
export interface Task {
  /** Stable id, unique within its dataset split (used for resume and eval bookkeeping). */
  readonly id: string;
  /** The first user message. */
  readonly prompt: string;
  /** Reference answer for the reward, when the dataset has one. */
  readonly answer?: unknown;
  /**
   * Everything else a tool, reward or domain needs (tests, user scenario, difficulty, ...).
   * `reference`, when present, is a perfect conversation (ChatMessage[] from src/tokens) that the
   * `sft` algorithm trains on.
   */
  readonly data: Readonly<Record<string, unknown>>;
}

/** What a dataset loader is given. */
export interface DatasetContext {
  /** Directory of the recipe file; relative paths in options resolve against it. */
  readonly recipeDir: string;
  /** Root of the datasets: $ATK_DATA_DIR, else the user data dir (see util/paths dataDir). */
  readonly dataDir: string;
  /** `dataset.path` from the recipe, resolved to an absolute path, when given. */
  readonly path?: string;
  readonly seed: number;
  readonly options: Readonly<Record<string, unknown>>;
  /** The recipe's whole `dataset` section (fields, prompt_template, split_by, eval_split, ...), when there is a recipe. */
  readonly config?: DatasetConfig;
}

/** A registered dataset. */
export interface DatasetDefinition extends ComponentOptionsSchema {
  readonly name: string;
  /** Load one split, in a deterministic order. @throws InputError on unreadable or malformed data. */
  load(split: string, ctx: DatasetContext): Promise<Task[]>;
  /** Default system prompt for agents on this dataset, if it has one. */
  readonly systemPrompt?: string;
  /** How a simulated user (the recipe's `user` section) plays this dataset's tasks; absent: the defaults of {@link UserSimulationHooks}. */
  readonly userSimulation?: UserSimulationHooks;
}

/** How a conversation with a simulated user ended, when the user-turn runner ended it. */
export type ConversationEnd = 'user_stop' | 'agent_stop' | 'max_steps' | 'too_many_errors';

/**
 * The dataset-specific parts of a conversation with a simulated user. Every member is optional;
 * the default of each (in its doc) reads task fields, so a file dataset can supply them as columns.
 */
export interface UserSimulationHooks {
  /** System prompt the user model plays the task from. Default: `task.data.user_system_prompt`. */
  systemPrompt?(task: Task): string | undefined;
  /** A fixed first agent line the conversation opens with, before the user speaks. Default: `task.data.greeting`. */
  opening?(task: Task): string | undefined;
  /** Whether a message ends the conversation. Default: it contains ###STOP###, ###TRANSFER### or ###OUT-OF-SCOPE###. */
  isStop?(text: string): boolean;
  /** Told how the runner ended the conversation, to record it where the reward reads it (e.g. `env.state`). */
  onEnd?(end: ConversationEnd, env: EpisodeEnv): void;
  /**
   * The dataset's own scripted user for one episode, played by `user: {kind: scripted}` when the recipe
   * gives no `messages`: deterministic given `seed` (the run seed and the episode). Default: none.
   */
  scriptedUser?(task: Task, seed: number): ScriptedUserSimulator;
}

/** A user simulator (tau2's interface): the next user message for the visible conversation so far. */
export interface ScriptedUserSimulator {
  respond(conversation: readonly { readonly role: 'user' | 'assistant'; readonly text: string }[]): Promise<string>;
}

/**
 * Per-episode scratch space shared by the episode's tools and its reward (e.g. the tau2
 * database copy the tools changed and the evaluator reads).
 */
export interface EpisodeEnv {
  readonly episodeId: string;
  readonly task: Task;
  readonly state: Map<string, unknown>;
  /** Aborted when the episode times out or the run is cancelled. */
  readonly signal: AbortSignal;
}
