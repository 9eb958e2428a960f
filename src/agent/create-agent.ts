import { Agent, NullConversationManager, type Message, type Tool } from '@strands-agents/sdk';
import { EpisodeLedger } from './episode-ledger.js';
import { renderedHistory } from './rendered-history.js';
import { TitoModel, type TitoModelOptions } from './tito-model.js';
import { toolCallGuard } from './tool-call-guard.js';

/** One episode's agent, its TITO model provider and the ledger both write to. */
export interface TitoAgent {
  readonly agent: Agent;
  readonly model: TitoModel;
  readonly ledger: EpisodeLedger;
  /** The whole conversation: `agent.messages` keeps only the turn in progress (rendered-history.ts). */
  transcript(): Message[];
}

/**
 * Builds a Strands agent for one episode with the SDK defaults that break RL turned off: no printer
 * (stdout), no conversation window (it would drop history the trajectory holds), no model retry
 * strategy (the engine client retries connection errors itself), tools run one after another so
 * stateful tools see calls in the order the model wrote them. Messages the model has rendered leave
 * `agent.messages`, so the SDK's work per model call does not grow with the episode (rendered-history.ts).
 */
export function createTitoAgent(
  options: Omit<TitoModelOptions, 'ledger'> & { readonly tools: readonly Tool[]; readonly systemPrompt?: string },
): TitoAgent {
  const ledger = new EpisodeLedger();
  ledger.toolNames = options.tools.map((t) => t.name);
  const model = new TitoModel({ ...options, ledger });
  const history = renderedHistory(model);
  const agent = new Agent({
    model,
    tools: [...options.tools],
    ...(options.systemPrompt ? { systemPrompt: options.systemPrompt } : {}),
    printer: false,
    conversationManager: new NullConversationManager(),
    retryStrategy: null,
    toolExecutor: 'sequential',
    plugins: [toolCallGuard(ledger), history.plugin],
  });
  return { agent, model, ledger, transcript: () => history.transcript(agent.messages) };
}
