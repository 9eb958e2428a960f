/**
 * Which training-step trajectory files a run keeps (`train.keep_trajectories`), so that a run of
 * days grows its directory by a bounded amount. Pure: the run directory applies it after each step.
 */

/** `all`, the newest `last` steps, or every `every`-th step (plus always the latest step). */
export type TrajectoryRetention = 'all' | { readonly last: number } | { readonly every: number };

/**
 * The steps among `steps` whose trajectory file goes once step `latest` is written. The latest
 * step is always kept, and steps after it are never touched: they are left by a run that was killed
 * and resumed from an earlier checkpoint, and the resumed run rewrites them as it reaches them.
 */
export function trajectoryStepsToDelete(steps: readonly number[], latest: number, keep: TrajectoryRetention): number[] {
  if (keep === 'all') return [];
  const goes = 'last' in keep ? (s: number) => s <= latest - keep.last : (s: number) => s % keep.every !== 0;
  return steps.filter((s) => s < latest && goes(s));
}
