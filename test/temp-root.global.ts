/**
 * Vitest global setup: one temporary root for the whole run, removed at its end. Tests and the processes
 * they start (the trainer, engines, tools, sandboxes, the built CLI) make their temporary files with
 * `os.tmpdir()` or Python's `tempfile`, both of which follow $TMPDIR, so pointing $TMPDIR here leaves
 * nothing behind in the host's temporary directory, whatever a test forgets to remove.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's temporary root, which each test process takes as its $TMPDIR (see temp-root.setup.ts). */
    readonly tempRoot: string;
  }
}

/** Makes the run's temporary root and hands it to the test processes; the returned teardown removes it. */
export default function setup(project: TestProject): () => void {
  const previous = process.env.TMPDIR;
  // Short, since tests bind unix sockets below it and a socket path is limited to about 107 bytes.
  const root = mkdtempSync(join(tmpdir(), 'atk-t-'));
  // Open like /tmp itself: sandboxed programs run as another user and must reach their folders below it.
  chmodSync(root, 0o1777);
  project.provide('tempRoot', root);
  // Test processes forked from here inherit it too; temp-root.setup.ts sets it again in each one.
  process.env.TMPDIR = root;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    // Retries: a child a test killed may still be closing files under the root.
    rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };
}
