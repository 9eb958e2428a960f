import type { ChatMessage, ChatTool } from './chat-types.js';
import { probeTemplate } from './incremental-render.js';
import type { ModelTokenizer } from './model-tokenizer.js';
import { diffTokens } from './token-diff.js';
import type { DriftReport } from './drift-report.js';
import type { TokenTrajectory } from './trajectory.js';

export type { DriftHunk, DriftReport } from './drift-report.js';

/** What the audit re-renders: the conversation the trajectory covers, as the template sees it. */
export interface DriftAuditInput {
  readonly tokenizer: ModelTokenizer;
  readonly trajectory: TokenTrajectory;
  /** System (if any) through the last assistant message the trajectory holds. */
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ChatTool[];
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>>;
  readonly maxHunks?: number;
}

/**
 * Drift audit: re-renders the finished conversation with the chat template, tokenizes it, and reports
 * where and how it differs from the trajectory (templates that strip earlier `<think>`, re-serialised
 * tool-call JSON, non-canonical BPE splits). A trajectory that ends on the model's stop token is
 * compared with the template's turn closer appended, since the template always writes it.
 */
export function auditDrift(input: DriftAuditInput): DriftReport {
  const { tokenizer, trajectory } = input;
  const kwargs = input.chatTemplateKwargs ?? {};
  const rerendered = tokenizer.encode(
    tokenizer.renderChat(input.messages, { ...kwargs, tools: input.tools, addGenerationPrompt: false }),
  );
  const probe = probeTemplate(tokenizer, kwargs);
  const last = trajectory.ids[trajectory.ids.length - 1];
  const closer = tokenizer.encode(
    probe.stopToken !== undefined && last === probe.stopToken ? probe.closerAfterStop : probe.turnCloser,
  );
  const actual = trajectory.ids.concat(closer);

  const mask = trajectory.mask();
  const hunks = diffTokens(actual, rerendered);
  const described = hunks.map((h) => ({
    trajectory: { start: h.aStart, end: h.aEnd, text: tokenizer.decode(actual.slice(h.aStart, h.aEnd)) },
    rerendered: { start: h.bStart, end: h.bEnd, text: tokenizer.decode(rerendered.slice(h.bStart, h.bEnd)) },
    modelTokens: countOnes(mask, h.aStart, h.aEnd),
  }));
  return {
    identical: hunks.length === 0,
    trajectoryTokens: trajectory.length,
    rerenderedTokens: rerendered.length,
    firstDivergence: hunks[0] ? hunks[0].aStart : null,
    changedModelTokens: described.reduce((sum, h) => sum + h.modelTokens, 0),
    hunkCount: hunks.length,
    hunks: described.slice(0, input.maxHunks ?? 20),
  };
}

function countOnes(mask: readonly number[], start: number, end: number): number {
  let n = 0;
  for (let i = start; i < Math.min(end, mask.length); i++) n += mask[i];
  return n;
}
