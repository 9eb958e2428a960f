export type * from './chat-types.js';
export {
  loadModelTokenizer,
  type ModelTokenizer,
  type RenderChatOptions,
  type TokenizerOverrides,
} from './model-tokenizer.js';
export {
  incrementalRenderer,
  probeTemplate,
  type IncrementalRenderer,
  type TemplateProbe,
} from './incremental-render.js';
export {
  TokenTrajectory,
  TRAJECTORY_FORMAT,
  type SegmentSource,
  type TrajectoryCounters,
  type TrajectoryJSON,
  type TrajectorySegment,
} from './trajectory.js';
export { auditDrift, type DriftAuditInput, type DriftHunk, type DriftReport } from './drift.js';
export { diffTokens, type DiffHunk } from './token-diff.js';
export {
  toolCallParsers,
  hermesParser,
  type ParsedToolCall,
  type ParsedTurn,
  type ToolCallErrorKind,
  type ToolCallParser,
  type ToolCallParseContext,
  type ToolCallToRender,
} from './tool-calls/index.js';
export { BUILTIN_CHAT_TEMPLATES, builtinChatTemplate } from './builtin-templates.js';
export { pythonJson } from './python-json.js';
export { parseReply } from './reply-markers.js';
export {
  AUTO_TOOL_CALL_FORMAT,
  detectToolCallFormat,
  resolveToolCallFormat,
} from './tool-call-format.js';
export { checkChatTemplate, type TemplateCheck } from './template-check.js';
export {
  AUTO_REASONING_HISTORY,
  detectReasoningHistory,
  resolveReasoningHistory,
  type ReasoningHistory,
} from './reasoning-history.js';
