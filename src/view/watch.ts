/**
 * Keeps a run catalog current while runs train: `fs.watch` on each run directory and its
 * trajectories/ and eval/ folders wakes a refresh within a moment of a write, and a slow poll catches
 * what watching misses (folders created later, network filesystems, new runs). Refreshes never
 * overlap; a wake-up during one runs another after it.
 */
import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { RunCatalog } from './run-catalog.js';

export interface RunWatcher {
  close(): void;
}

/** Watch `catalog`'s runs; `onChange` gets the ids of runs that are new or changed. */
export function watchRuns(catalog: RunCatalog, onChange: (ids: readonly string[]) => void, pollMs = 2000): RunWatcher {
  const watchers = new Map<string, FSWatcher>();
  let running = false;
  let again = false;
  let closed = false;
  let debounce: NodeJS.Timeout | undefined;

  const refresh = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const changed = await catalog.refresh().catch(() => [] as string[]);
        if (closed) return;
        watchNewDirs();
        if (changed.length) onChange(changed);
      } while (again && !closed);
    } finally {
      running = false;
    }
  };
  const wake = (): void => {
    clearTimeout(debounce);
    // Writes come in bursts (a metrics line, then a trajectories file, then the manifest).
    debounce = setTimeout(() => void refresh(), 100);
  };
  const watchNewDirs = (): void => {
    for (const run of catalog.list()) {
      for (const dir of [run.dir, join(run.dir, 'trajectories'), join(run.dir, 'eval')]) {
        if (watchers.has(dir)) continue;
        try {
          const watcher = watch(dir, { persistent: false }, wake);
          watcher.on('error', () => {
            watcher.close();
            watchers.delete(dir);
          });
          watchers.set(dir, watcher);
        } catch {
          // Not there yet (no step written): the poll tries again.
        }
      }
    }
  };

  watchNewDirs();
  const poll = setInterval(() => void refresh(), pollMs);
  poll.unref();
  return {
    close() {
      closed = true;
      clearInterval(poll);
      clearTimeout(debounce);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
