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
