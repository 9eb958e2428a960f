import type { EvalSummary, RunEvent, StepMetrics } from '../../run/events.js';
import { formatEvent } from '../progress-lines.js';

/** Everything the dashboard shows, folded from the event stream (pure data, so tests can build it). */
export interface DashboardState {
  readonly title: string;
  readonly phase: string;
  readonly startStep: number;
  readonly totalSteps: number;
  /** Steps finished so far, counting from 0 (a resumed run starts at its checkpoint). */
  readonly stepsDone: number;
  /** ms timestamp of the first step (or eval) of this process; the ETA extrapolates from it. */
  readonly startedAt: number | undefined;
  readonly episodes: { readonly done: number; readonly total: number };
  readonly evaluating: { readonly label: string; readonly tasks: number } | undefined;
  /** Per step: the episodes' mean reward and success, or for supervised steps the loss and token accuracy. */
  readonly rewards: readonly number[];
  readonly accuracies: readonly number[];
  /** Whether the steps are supervised (sft): the figures above are loss and token accuracy. */
  readonly supervised: boolean;
  readonly evals: readonly { readonly label: string; readonly step: number; readonly summary: EvalSummary }[];
  readonly last: StepMetrics | undefined;
  readonly droppedGroups: number;
  readonly groups: number;
  readonly warnings: readonly string[];
  /** Lines that scroll above the live area (steps, evals, checkpoints, warnings). */
  readonly log: readonly string[];
  readonly status: 'finished' | 'failed' | 'interrupted' | undefined;
}

/** How many warnings the dashboard keeps on screen. */
export const WARNINGS_SHOWN = 3;

/** The state before any event. */
export function initialDashboard(title = 'atk'): DashboardState {
  return {
    title,
    phase: 'starting',
    startStep: 0,
    totalSteps: 0,
    stepsDone: 0,
    startedAt: undefined,
    episodes: { done: 0, total: 0 },
    evaluating: undefined,
    rewards: [],
    accuracies: [],
    supervised: false,
    evals: [],
    last: undefined,
    droppedGroups: 0,
    groups: 0,
    warnings: [],
    log: [],
    status: undefined,
  };
}

/** Fold one event into the state; `now` is the event's arrival time in ms. */
export function reduceDashboard(state: DashboardState, event: RunEvent, now: number): DashboardState {
  const line = formatEvent(event);
  const logged = line !== undefined && LOGGED.has(event.type) ? { log: [...state.log, line] } : {};
  switch (event.type) {
    case 'runStarted':
      return {
        ...state,
        ...logged,
        title: event.runDir,
        startStep: event.startStep,
        stepsDone: event.startStep,
        totalSteps: event.totalSteps,
        phase: event.resumed ? 'resumed' : 'running',
      };
    case 'phase':
      return { ...state, phase: event.message };
    case 'stepStarted':
      return {
        ...state,
        phase: `step ${event.step}: collecting`,
        startedAt: state.startedAt ?? now,
        episodes: { done: 0, total: event.episodes },
      };
    case 'episodeFinished':
      // Episodes of later steps collected ahead (rollout.max_staleness > 0) are not the current step's progress.
      if (event.step > state.stepsDone + 1) return { ...state, startedAt: state.startedAt ?? now };
      return { ...state, startedAt: state.startedAt ?? now, episodes: { done: event.done, total: event.total } };
    case 'stepFinished': {
      const m = event.metrics;
      const tokenAccuracy = m['train/token_accuracy'];
      const supervised = tokenAccuracy !== undefined;
      return {
        ...state,
        ...logged,
        phase: `step ${m.step} done`,
        stepsDone: m.step,
        rewards: [...state.rewards, supervised ? (m['train/loss'] ?? 0) : m.reward_mean],
        accuracies: [...state.accuracies, supervised ? tokenAccuracy : m.accuracy],
        supervised,
        last: m,
        droppedGroups: state.droppedGroups + m.dropped_groups,
        groups: state.groups + m.groups,
      };
    }
    case 'evalStarted':
      return {
        ...state,
        phase: `eval ${event.label}`,
        startedAt: state.startedAt ?? now,
        evaluating: { label: event.label, tasks: event.tasks },
        episodes: { done: 0, total: 0 },
      };
    case 'evalFinished':
      return {
        ...state,
        ...logged,
        evaluating: undefined,
        evals: [...state.evals, { label: event.label, step: event.step, summary: event.summary }],
      };
    case 'checkpointSaved':
      return { ...state, ...logged };
    case 'warning':
      return { ...state, ...logged, warnings: [...state.warnings, event.message].slice(-WARNINGS_SHOWN) };
    case 'runFinished':
      return { ...state, ...logged, status: event.status, phase: `run ${event.status}` };
  }
}

const LOGGED: ReadonlySet<RunEvent['type']> = new Set([
  'runStarted',
  'stepFinished',
  'evalFinished',
  'checkpointSaved',
  'warning',
  'runFinished',
]);

/**
 * Share of the work done, 0..1: finished steps plus the current step's finished episodes; during an
 * eval with no training steps (atk eval), its finished episodes.
 */
export function progressFraction(state: DashboardState): number {
  const steps = state.totalSteps - state.startStep;
  if (steps <= 0) return state.episodes.total > 0 ? state.episodes.done / state.episodes.total : 0;
  const within = state.evaluating || state.episodes.total === 0 ? 0 : state.episodes.done / state.episodes.total;
  return Math.min(1, (state.stepsDone - state.startStep + (state.stepsDone < state.totalSteps ? within : 0)) / steps);
}

/** Seconds left at the pace so far, or undefined before there is a pace to go by. */
export function etaSeconds(state: DashboardState, now: number): number | undefined {
  const fraction = progressFraction(state);
  if (state.startedAt === undefined || fraction <= 0) return undefined;
  const elapsed = (now - state.startedAt) / 1000;
  return (elapsed * (1 - fraction)) / fraction;
}
