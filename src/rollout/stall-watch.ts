/**
 * Stalls name themselves: every wait of a step (engine request, tool call, simulated user, reward,
 * trainer call, weight sync)
 * is registered while it is open, with what was last heard from its component. A step that runs
 * past `factor` times the median of the steps before it is reported with the oldest open waits,
 * so a hung run says "waiting on the trainer for 41 min, last heard: train step 6 answered".
 * An evaluation is watched by its episodes instead: one during which no episode has finished for
 * `factor` times the median episode (at least `minMs`; 10 x `minMs` before the first one finishes)
 * is reported the same way.
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

/** An evaluation during which no episode has finished for too long. */
export interface EvalStallReport {
  readonly label: string;
  /** Since the last episode finished, or the evaluation started. */
  readonly silentMs: number;
  readonly done: number;
  readonly total: number;
  /** Median wall time of the evaluation's finished episodes; undefined before the first. */
  readonly medianEpisodeMs: number | undefined;
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
  private evaluation:
    | { label: string; total: number; done: number; lastFinish: number; episodeMs: number[]; reportAfterMs: number }
    | undefined;

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

  /**
   * The running step ended; `trained` false for one that updated nothing (no group had a learning signal),
   * whose time says nothing about how long a step takes and is left out of the median.
   */
  stepFinished(trained = true): void {
    if (this.step && trained) this.stepMs.push(this.now() - this.step.since);
    this.step = undefined;
  }

  evalStarted(label: string, total: number): void {
    this.evaluation = { label, total, done: 0, lastFinish: this.now(), episodeMs: [], reportAfterMs: 0 };
  }

  /** An episode of the running evaluation finished after `wallMs`. */
  evalEpisodeFinished(wallMs: number): void {
    if (!this.evaluation) return;
    this.evaluation.done++;
    this.evaluation.episodeMs.push(wallMs);
    this.evaluation.lastFinish = this.now();
    this.evaluation.reportAfterMs = 0;
  }

  evalFinished(): void {
    this.evaluation = undefined;
  }

  /**
   * A report when the running evaluation has had no episode finish for `factor` x its median episode (at
   * least minMs; before any finishes, 10 x minMs or factor x the median step, whichever is longer), else
   * undefined. After a report the next comes at twice the silence.
   */
  checkEval(): EvalStallReport | undefined {
    const e = this.evaluation;
    if (!e) return undefined;
    const now = this.now();
    const silentMs = now - e.lastFinish;
    const medianEpisodeMs = e.episodeMs.length ? median(e.episodeMs) : undefined;
    const expected =
      medianEpisodeMs !== undefined
        ? Math.max(this.factor * medianEpisodeMs, this.minMs)
        : Math.max(10 * this.minMs, this.stepMs.length ? this.factor * median(this.stepMs) : 0);
    if (silentMs < Math.max(expected, e.reportAfterMs)) return undefined;
    e.reportAfterMs = 2 * silentMs;
    return { label: e.label, silentMs, done: e.done, total: e.total, medianEpisodeMs, waits: this.openWaits(now) };
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
    return { step: this.step.number, elapsedMs, medianMs, waits: this.openWaits(now) };
  }

  /** The open waits, longest first, each with what was last heard from its component. */
  private openWaits(now: number): OpenWait[] {
    return [...this.open.values()]
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
  }
}

/** How often a running step or evaluation is checked for a stall. */
const STALL_CHECK_MS = 5_000;

/** Checks `watch` every few seconds (a step first, else an evaluation) and hands each report's line to `warn`; returns the stop. */
export function reportStalls(watch: StallWatch, warn: (message: string) => void, everyMs = STALL_CHECK_MS): () => void {
  const timer = setInterval(() => {
    const report = watch.check() ?? watch.checkEval();
    if (report) warn(formatStall(report));
  }, everyMs).unref();
  return () => clearInterval(timer);
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
export function formatStall(report: StallReport | EvalStallReport): string {
  const s = (ms: number): string => `${Math.round(ms / 1000)} s`;
  const head =
    'label' in report
      ? `stall: eval ${report.label} has had no episode finish for ${s(report.silentMs)} (${report.done} of ${report.total} done${report.medianEpisodeMs === undefined ? '' : `; an episode takes ${s(report.medianEpisodeMs)} at the median`})`
      : `stall: step ${report.step} has run ${s(report.elapsedMs)}, ${(report.elapsedMs / report.medianMs).toFixed(1)}x its median of ${s(report.medianMs)}`;
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
