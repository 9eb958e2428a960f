import type { Tool } from '@strands-agents/sdk';
import type { EpisodeEnv } from '../datasets/types.js';
import type { ComponentOptionsSchema } from '../util/component-options.js';

export type { EpisodeEnv } from '../datasets/types.js';

/** What a tool factory is given once per run. */
export interface ToolRunContext {
  readonly recipeDir: string;
  readonly runDir?: string;
  /** Warnings the run should show once (e.g. "sandbox without namespaces"). */
  warn(message: string): void;
  /**
   * Registers cleanup to run when the run ends (normally, on error or on Ctrl-C), e.g. stopping an
   * MCP server. Absent where nothing will call it (one-off checks); tools must then clean up themselves.
   */
  onClose?(close: () => Promise<void>): void;
}

/** Tools made for one episode. */
export type EpisodeTools = (env: EpisodeEnv) => Tool[];

/** A registered tool (or family of tools, like a tau2 domain's). */
export interface ToolDefinition extends ComponentOptionsSchema {
  readonly name: string;
  /** Build once per run; the result makes each episode's tool instances. @throws ConfigError on bad options. */
  create(options: Readonly<Record<string, unknown>>, ctx: ToolRunContext): Promise<EpisodeTools>;
}
