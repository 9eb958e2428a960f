/** tau2-bench airline and retail: databases, tools, tasks, prompts, user simulator and evaluator. */
export { dbHash, EpisodeDb, sameState, TAU2_DOMAINS, type Tau2Domain } from './db.js';
export {
  baseDb,
  domainSpec,
  ENV_DOMAINS,
  GENERATED_DOMAINS,
  newEpisodeDb,
  Tau2EnvOptionsSchema,
  Tau2OptionsSchema,
  type DomainSpec,
  type EnvDomain,
  type Tau2Options,
} from './domain.js';
export { HELPDESK_TASK_KINDS, HelpdeskUser, type HelpdeskScenario, type HelpdeskTaskKind } from './helpdesk-user.js';
export { helpdeskPolicyViolations } from './helpdesk-policy.js';
export { HELPDESK_POLICY, helpdeskBase, helpdeskModel, helpdeskTools, SHIPPING_SPEEDS } from './tools/helpdesk.js';
export { episodeDb, TAU2_DB_KEY, TAU2_TERMINATION_KEY, terminationOf, transcriptOf } from './episode.js';
export {
  evaluateEpisode,
  type Evaluation,
  type EvaluationInput,
  type NlJudge,
  type NlVerdict,
  type Termination,
  type TranscriptTurn,
} from './evaluator.js';
export { firstEffectiveWrite, runPerfectAgent } from './perfect-agent.js';
export { AGENT_GREETING, agentSystemPrompt, loadPolicy, loadUserGuidelines, userSystemPrompt } from './prompts.js';
export { loadTau2Tasks, TAU2_RELEASES, type Tau2Release, type Tau2Task } from './tasks.js';
export { callTool, runStrandsTool, strandsTools, type DomainTool, type ToolOutcome } from './tools/common.js';
export {
  ChatUrlUser,
  EngineUser,
  isStopMessage,
  ScriptedUser,
  STOP_TOKENS,
  userModelMessages,
  type UserSimulator,
} from './user-simulator.js';
