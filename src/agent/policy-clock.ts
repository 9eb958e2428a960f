/**
 * Which policy version samples a model request: a fixed number (an eval, a recorded episode) or a
 * function read at each request (a training run: the engine may serve a newer policy from one turn to
 * the next, so each turn is stamped with the version it was sampled under).
 */
export type PolicyClock = number | (() => number);

/** The version the clock shows now. */
export function policyVersionNow(clock: PolicyClock): number {
  return typeof clock === 'function' ? clock() : clock;
}

/** The policy version a run's engine serves, advanced once a sync has reached it. */
export interface ServedPolicy {
  /** Version new engine requests are answered by. */
  readonly version: number;
  /** The clock a run's episodes read at each request. */
  readonly clock: () => number;
  /** Called when the engine serves `version` (after a weight sync, or a checkpoint loaded on resume). */
  advance(version: number): void;
}

/** The served policy starting at `version`; it never goes back (a late sync of an older version changes nothing). */
export function servedPolicy(version: number): ServedPolicy {
  let served = version;
  return {
    get version() {
      return served;
    },
    clock: () => served,
    advance(next) {
      served = Math.max(served, next);
    },
  };
}
