import { CancelledError } from '../errors/index.js';

/**
 * Runs a download with Ctrl-C wired to its abort signal: an interrupted download becomes a CancelledError
 * (exit 130) saying it resumes, whatever error the abort surfaced as (`atk data fetch`, `atk model fetch`).
 */
export async function interruptibleDownload<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const interrupt = (): void => controller.abort();
  process.once('SIGINT', interrupt);
  try {
    return await work(controller.signal);
  } catch (error) {
    if (controller.signal.aborted && !(error instanceof CancelledError))
      throw new CancelledError('download cancelled; run again to resume', { cause: error });
    throw error;
  } finally {
    process.off('SIGINT', interrupt);
  }
}
