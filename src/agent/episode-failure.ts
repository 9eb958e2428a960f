import { ProviderError } from '../errors/index.js';

/**
 * The layer an episode failed in. Anything thrown while an episode runs ends that episode (never
 * the step or the eval) and is counted under one of these kinds.
 */
export type EpisodeErrorKind =
  | 'engine'
  | 'timeout'
  | 'template'
  | 'parser'
  | 'sdk'
  | 'tool'
  | 'reward'
  | 'user'
  | 'agent'
  | 'scheduler';

/** An error tagged with the layer it came from, so the episode's record says where it broke. */
export class EpisodeFailure extends Error {
  constructor(
    readonly kind: EpisodeErrorKind,
    cause: unknown,
  ) {
    super(errorMessage(cause), { cause });
    this.name = 'EpisodeFailure';
  }
}

/** Runs `work`, tagging what it throws with `kind` (an error already tagged keeps its layer). */
export function blame<T>(kind: EpisodeErrorKind, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw error instanceof EpisodeFailure ? error : new EpisodeFailure(kind, error);
  }
}

/** `blame` for async work. */
export async function blameAsync<T>(kind: EpisodeErrorKind, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw error instanceof EpisodeFailure ? error : new EpisodeFailure(kind, error);
  }
}

/**
 * The layer and message of an error thrown by an episode: the innermost tag in its cause chain (the
 * SDK wraps what the model provider throws), a ProviderError as `engine`, anything else as `fallback`.
 */
export function describeFailure(
  error: unknown,
  fallback: EpisodeErrorKind,
): { readonly kind: EpisodeErrorKind; readonly message: string } {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof EpisodeFailure) return { kind: e.kind, message: e.message };
    if (e instanceof ProviderError) return { kind: 'engine', message: e.message };
  }
  return { kind: fallback, message: errorMessage(error) };
}

const BUILTIN_ERRORS = new Set(['TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'URIError', 'EvalError']);

/** The message of anything thrown, on one line and at most 1,000 characters (a trajectory field, not a dump). */
export function errorMessage(error: unknown): string {
  // Built-in error names say what went wrong (RangeError: stack overflow); ours are in the message already.
  const text =
    error instanceof Error
      ? `${BUILTIN_ERRORS.has(error.name) ? `${error.name}: ` : ''}${error.message}`
      : String(error);
  const line = text.replace(/\s*\n\s*/g, ' ');
  return line.length > 1000 ? `${line.slice(0, 1000)}...` : line;
}
