import type { Recipe } from '../recipe/schema.js';
import type { RunDir } from '../runs/index.js';
import { TrackerSet } from '../trackers/index.js';

/**
 * Feeds the run's metrics lines to the recipe's `output.trackers`, warning on stderr once per
 * tracker that fails. Returns the set (undefined without trackers) so a caller can close it; a
 * run that exits without closing leaves complete event files, and the W&B logger finishes on EOF.
 */
export function attachTrackers(run: RunDir, recipe: Recipe): TrackerSet | undefined {
  const { trackers, wandb } = recipe.output;
  if (trackers.length === 0) return undefined;
  const set = new TrackerSet({
    trackers,
    dir: run.dir,
    runName: `${run.name}/${run.version}`,
    config: recipe,
    ...(wandb ? { wandb } : {}),
    warn: (message) => process.stderr.write(`warning: ${message}\n`),
  });
  run.onMetrics((line) => set.log(line));
  return set;
}
