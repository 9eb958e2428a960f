/**
 * Stalls name themselves: every wait of a step (engine request, tool call, simulated user, reward,
 * trainer call, weight sync)
 * is registered while it is open, with what was last heard from its component. A step that runs
 * past `factor` times the median of the steps before it is reported with the oldest open waits,
 * so a hung run says "waiting on the trainer for 41 min, last heard: train step 6 answered".
 */
import { performance } from 'node:perf_hooks';

/** The parts of a run a step waits on. */
export type WaitComponent = 'engine' | 'trainer' | 'weight sync' | 'tool' | 'reward' | 'user' | 'process';

export interface StallWatchOptions {
  /** A step is stalled past `factor` times the median step; default 3. */
  readonly factor?: number;
  /** ...and never before this many ms (warm-up and tiny steps are noisy); default 30 s. */
  readonly minMs?: number;
  /** Clock in ms; default performance.now. */
  readonly now?: () => number;
}

/** Where waits are registered: the run's StallWatch, or a rollout worker's relay to it. */
export type WaitRecorder = Pick<StallWatch, 'begin' | 'wait'>;

/** One open wait as a stall report shows it. */
export interface OpenWait {
  readonly component: WaitComponent;
  readonly detail: string;
  readonly forMs: number;
  /** The last thing heard from this component (any wait of it that ended), if anything was. */
  readonly lastHeard?: { readonly what: string; readonly agoMs: number };
}

export interface StallReport {
  readonly step: number;
  readonly elapsedMs: number;
  readonly medianMs: number;
  /** Open waits, longest first. */
  readonly waits: readonly OpenWait[];
}

/** Waits shown in one report; the rest are counted. */
const WAITS_SHOWN = 3;

export class StallWatch {
  private readonly factor: number;
  private readonly minMs: number;
  private readonly now: () => number;
  private readonly open = new Map<number, { component: WaitComponent; detail: string; since: number }>();
  private readonly heard = new Map<WaitComponent, { what: string; at: number }>();
  private readonly stepMs: number[] = [];
  private nextId = 0;
  private step: { number: number; since: number; reportAfterMs: number } | undefined;

  constructor(options: StallWatchOptions = {}) {
    this.factor = options.factor ?? 3;
    this.minMs = options.minMs ?? 30_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** Runs `work` as an open wait on `component`; what it ends with is what was last heard from it. */
  wait<T>(component: WaitComponent, detail: string, work: () => Promise<T>): Promise<T> {
    return openWait((c, d) => this.begin(c, d), component, detail, work);
  }

  /** Opens a wait on `component` (for work that is not one promise, e.g. a streaming tool call); call the result once when it ends, with the error if it failed. */
  begin(component: WaitComponent, detail: string): (error?: unknown) => void {
    const id = this.nextId++;
    this.open.set(id, { component, detail, since: this.now() });
    return (error) => {
      if (!this.open.delete(id)) return;
      const outcome = error === undefined ? 'answered' : error instanceof Error ? error.message : String(error);
      this.heard.set(component, { what: `${detail}: ${outcome}`.slice(0, 300), at: this.now() });
    };
  }

  stepStarted(step: number): void {
    this.step = { number: step, since: this.now(), reportAfterMs: 0 };
  }

  stepFinished(): void {
    if (this.step) this.stepMs.push(this.now() - this.step.since);
    this.step = undefined;
  }

  /**
   * A report when the running step is past its threshold (factor x median, at least minMs; needs one
   * finished step), else undefined. After a report the next comes at twice the elapsed time.
   */
  check(): StallReport | undefined {
    if (!this.step || this.stepMs.length === 0) return undefined;
    const now = this.now();
    const elapsedMs = now - this.step.since;
    const medianMs = median(this.stepMs);
    const threshold = Math.max(this.factor * medianMs, this.minMs, this.step.reportAfterMs);
    if (elapsedMs < threshold) return undefined;
    this.step.reportAfterMs = 2 * elapsedMs;
    const waits = [...this.open.values()]
      .sort((a, b) => a.since - b.since)
      .map((w): OpenWait => {
        const heard = this.heard.get(w.component);
        return {
          component: w.component,
          detail: w.detail,
          forMs: now - w.since,
          ...(heard ? { lastHeard: { what: heard.what, agoMs: now - heard.at } } : {}),
        };
      });
    return { step: this.step.number, elapsedMs, medianMs, waits };
  }
}

/** Runs `work` as a wait opened with `begin`, ended with its outcome. */
export async function openWait<T>(
  begin: WaitRecorder['begin'],
  component: WaitComponent,
  detail: string,
  work: () => Promise<T>,
): Promise<T> {
  const end = begin(component, detail);
  try {
    const value = await work();
    end();
    return value;
  } catch (error) {
    end(error);
    throw error;
  }
}

/** A report as one line: `step 7 has run 312 s, 5.2x its median of 60 s; waiting on engine for 290 s (...), last heard 290 s ago: ...`. */
export function formatStall(report: StallReport): string {
  const s = (ms: number): string => `${Math.round(ms / 1000)} s`;
  const head = `stall: step ${report.step} has run ${s(report.elapsedMs)}, ${(report.elapsedMs / report.medianMs).toFixed(1)}x its median of ${s(report.medianMs)}`;
  if (report.waits.length === 0) return `${head}; no wait is open (the run loop itself is busy)`;
  const shown = report.waits
    .slice(0, WAITS_SHOWN)
    .map(
      (w) =>
        `waiting on ${w.component} for ${s(w.forMs)} (${w.detail})${w.lastHeard ? `, last heard ${s(w.lastHeard.agoMs)} ago: ${w.lastHeard.what}` : ', nothing heard from it yet'}`,
    );
  const more = report.waits.length > WAITS_SHOWN ? `; ${report.waits.length - WAITS_SHOWN} more waits open` : '';
  return `${head}; ${shown.join('; ')}${more}`;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
