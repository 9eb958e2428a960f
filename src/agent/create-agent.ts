import { Agent, NullConversationManager, type Tool } from '@strands-agents/sdk';
import { EpisodeLedger } from './episode-ledger.js';
import { TitoModel, type TitoModelOptions } from './tito-model.js';
import { toolCallGuard } from './tool-call-guard.js';

/** One episode's agent, its TITO model provider and the ledger both write to. */
export interface TitoAgent {
  readonly agent: Agent;
  readonly model: TitoModel;
  readonly ledger: EpisodeLedger;
}

/**
 * Builds a Strands agent for one episode with the SDK defaults that break RL turned off: no printer
 * (stdout), no conversation window (it would drop history the trajectory holds), no model retry
 * strategy (the engine client retries connection errors itself), tools run one after another so
 * stateful tools see calls in the order the model wrote them.
 */
export function createTitoAgent(
  options: Omit<TitoModelOptions, 'ledger'> & { readonly tools: readonly Tool[]; readonly systemPrompt?: string },
): TitoAgent {
  const ledger = new EpisodeLedger();
  ledger.toolNames = options.tools.map((t) => t.name);
  const model = new TitoModel({ ...options, ledger });
  const agent = new Agent({
    model,
    tools: [...options.tools],
    ...(options.systemPrompt ? { systemPrompt: options.systemPrompt } : {}),
    printer: false,
    conversationManager: new NullConversationManager(),
    retryStrategy: null,
    toolExecutor: 'sequential',
    plugins: [toolCallGuard(ledger)],
  });
  return { agent, model, ledger };
}
