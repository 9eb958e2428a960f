import type { PolicyClock } from '../agent/policy-clock.js';
import type { Task } from '../datasets/types.js';
import type { EpisodeSampling } from '../engines/types.js';
import type { EpisodeEnv } from '../tools/types.js';
import type { EpisodeResult } from './episode.js';

/** One episode of an agent atk did not build (`agent.external`), run behind the gateway. */
export interface ExternalEpisodeRequest {
  readonly task: Task;
  readonly env: EpisodeEnv;
  readonly systemPrompt?: string;
  /** The sampling policy version; a function (the served version) is read at each model request. */
  readonly policyVersion: PolicyClock;
  readonly sampling: EpisodeSampling;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** What the episode collector needs of external agents; src/gateway implements it. */
export interface ExternalEpisodes {
  /**
   * Runs one episode. A crash, hang, non-zero exit or an agent that never called the model is a failed
   * episode (`error` set, stderr tail in `agentLog`), never an exception.
   * @throws CancelledError when `signal` aborts.
   */
  run(request: ExternalEpisodeRequest): Promise<EpisodeResult>;
  close(): Promise<void>;
}
