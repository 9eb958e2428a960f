export { startGateway, type Gateway, type EpisodeEndpoint } from './server.js';
export {
  GatewayEpisode,
  type GatewayEpisodeOptions,
  type GatewayReply,
  type GatewaySegment,
} from './gateway-episode.js';
export { GatewayError } from './errors.js';
export { parseCompletionRequest, type ParsedCompletionRequest } from './openai-request.js';
export {
  startExternalAgents,
  externalEpisodeResult,
  type ExternalAgents,
  type ExternalAgentsOptions,
} from './external-episode.js';
export type { ExternalEpisodeRequest } from '../rollout/external.js';
export { runAgentCommand, callAgentServer, type AgentOutcome } from './agent-process.js';
export { reportedReward, REPORTED_REWARD_KEY } from './reported-reward.js';
