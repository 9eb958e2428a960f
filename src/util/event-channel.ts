/**
 * Lets callbacks inside concurrent work (episodes finishing) feed an async generator: push
 * events from anywhere, then `drainUntil(promise)` yields them as they come until the work is done.
 */
export class EventChannel<E> {
  private readonly queue: E[] = [];
  private wake: (() => void) | undefined;

  push(event: E): void {
    this.queue.push(event);
    this.wake?.();
  }

  /** Yield pushed events until `work` settles, then the rest; returns (or throws) what `work` does. */
  async *drainUntil<T>(work: Promise<T>): AsyncGenerator<E, T> {
    let settled = false;
    const done = work.then(
      () => {
        settled = true;
        this.wake?.();
      },
      () => {
        settled = true;
        this.wake?.();
      },
    );
    while (!settled || this.queue.length > 0) {
      if (this.queue.length > 0) {
        yield this.queue.shift()!;
        continue;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    await done;
    return work;
  }
}
