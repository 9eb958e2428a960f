import { ProviderError } from '../errors/index.js';
import type { Rollout } from './collect.js';

/**
 * One episode's error fails only that episode; but when every episode of a step or an eval failed in the
 * engine, the engine is what is broken (it died, or refuses every request), there is nothing to train on or
 * score, and the run must fail loudly rather than train nothing and report 0%.
 * @returns the error that fails the run, naming `what` (`step 3`, `eval step-00000`) and the first failure;
 * undefined when any episode did not fail in the engine.
 */
export function everyEpisodeFailedInEngine(rollouts: readonly Rollout[], what: string): ProviderError | undefined {
  if (rollouts.length === 0 || !rollouts.every((r) => r.failed && r.errorKind === 'engine')) return undefined;
  return new ProviderError(
    `${what}: all ${rollouts.length} episodes failed in the engine; the first: ${rollouts[0]!.error ?? 'no message'}`,
    {
      hint: 'the engine is down or refuses every request: its log (logs/engine.log, or logs/trainer.log for the embedded engine) says why; atk run --resume continues from the last checkpoint once it is fixed',
    },
  );
}
