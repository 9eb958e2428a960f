// The reward of the TRL side-by-side (bench/lib/trl-peer.ts), as an atk reward module: 1 when the episode's first
// tool call is a calculator call whose result is the task's answer, else 0. With agent.max_turns 1 that is the
// model's first turn only, the part of the quickstart task TRL's GRPOTrainer can run too (bench/lib/trl_peer.py
// scores the same turn from its text).
import type { EpisodeOutcome } from '../../src/rewards/types.js';

export function firstTurnCall(outcome: EpisodeOutcome): number {
  const call = outcome.toolCalls[0];
  if (call?.name !== 'calculator' || call.status !== 'success') return 0;
  return call.output.trim() === String(outcome.task.answer) ? 1 : 0;
}
