export { createTitoAgent, type TitoAgent } from './create-agent.js';
export { TitoModel, TITO_STOP, type TitoModelOptions } from './tito-model.js';
export { EpisodeLedger, type ToolErrorKind } from './episode-ledger.js';
export { toolCallGuard } from './tool-call-guard.js';
export { toChatMessages, toChatTools, toolResultText, pythonJson, systemPromptText } from './chat-messages.js';
export { checkJsonSchema } from './json-schema-check.js';
export {
  blame,
  blameAsync,
  describeFailure,
  errorMessage,
  EpisodeFailure,
  type EpisodeErrorKind,
} from './episode-failure.js';
export { type PolicyClock, policyVersionNow } from './policy-clock.js';
export { titoTurn, type TitoTurnContext, type TitoTurnRequest, type TitoTurnResult } from './tito-turn.js';
