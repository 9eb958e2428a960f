import { join } from 'node:path';
import type { MetricsLine } from '../runs/metrics.js';
import { scalarsOf } from './scalars.js';
import { TensorBoardWriter } from './tensorboard.js';
import type { Tracker } from './tracker.js';
import { startWandbTracker, type WandbInit } from './wandb.js';

export { scalarsOf, type StepScalars } from './scalars.js';
export { TensorBoardWriter } from './tensorboard.js';
export type { Tracker } from './tracker.js';
export { startWandbTracker, wandbLoggerCommand, type WandbInit } from './wandb.js';

/** The trackers a recipe names in `output.trackers`. */
export type TrackerName = 'tensorboard' | 'wandb';

export interface TrackerSetOptions {
  readonly trackers: readonly TrackerName[];
  /** The run directory (event files go to `<dir>/tb`, the W&B client's files to `<dir>/wandb`). */
  readonly dir: string;
  /** `<recipe name>/<version>`, the W&B run name unless `wandb.name` sets one. */
  readonly runName: string;
  /** The resolved recipe, the W&B run's config. */
  readonly config: unknown;
  readonly wandb?: {
    readonly project?: string | undefined;
    readonly entity?: string | undefined;
    readonly name?: string | undefined;
    readonly tags?: readonly string[] | undefined;
  };
  /** Where the one warning per failed tracker goes. */
  readonly warn: (message: string) => void;
  /** Starts the W&B side (a stand-in in tests); default the wandb Python client's logger process. */
  readonly startWandb?: (init: WandbInit) => Promise<Tracker>;
}

/**
 * The trackers of one run, fed every metrics line. A tracker that fails to start or to log warns
 * once and is dropped: it never stops the run, and the others go on. Each tracker's calls are
 * chained, so a slow one (W&B's network) neither reorders its steps nor holds up the run.
 */
export class TrackerSet {
  private readonly chains = new Map<string, Promise<Tracker | undefined>>();

  constructor(private readonly options: TrackerSetOptions) {
    for (const name of new Set(options.trackers))
      this.chains.set(
        name,
        this.guard(name, async () => this.start(name)),
      );
  }

  /** Send one metrics line (lines without a step, and non-numeric fields, are skipped). */
  log(line: MetricsLine): void {
    const scalars = scalarsOf(line);
    if (!scalars || scalars.values.length === 0) return;
    for (const [name, chain] of this.chains) {
      this.chains.set(
        name,
        chain.then((tracker) =>
          tracker
            ? this.guard(name, async () => {
                await tracker.log(scalars);
                return tracker;
              })
            : undefined,
        ),
      );
    }
  }

  /** Wait for every queued line, then close each tracker (W&B finishes its run). */
  async close(): Promise<void> {
    await Promise.all(
      [...this.chains].map(([name, chain]) =>
        chain.then((tracker) =>
          tracker
            ? this.guard(name, async () => {
                await tracker.close();
                return undefined;
              })
            : undefined,
        ),
      ),
    );
  }

  private start(name: string): Promise<Tracker> | Tracker {
    const { options } = this;
    if (name === 'tensorboard') {
      const writer = new TensorBoardWriter(join(options.dir, 'tb'));
      return { name, log: (scalars) => writer.write(scalars), close: () => writer.close() };
    }
    const init: WandbInit = {
      project: options.wandb?.project ?? process.env.WANDB_PROJECT ?? 'atk',
      entity: options.wandb?.entity ?? process.env.WANDB_ENTITY,
      name: options.wandb?.name ?? options.runName,
      tags: options.wandb?.tags ?? [],
      config: options.config,
      dir: options.dir,
    };
    return (options.startWandb ?? startWandbTracker)(init);
  }

  private async guard(name: string, work: () => Promise<Tracker | undefined>): Promise<Tracker | undefined> {
    try {
      return await work();
    } catch (error) {
      this.options.warn(
        `tracker ${name} failed and is off for the rest of the run (the run goes on): ${error instanceof Error ? error.message : String(error)}`,
      );
      return undefined;
    }
  }
}
