import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest global setup: every temporary file of a test run (the tests' own mkdtemp directories, the
 * CLI and trainer processes they start, torchelastic's) goes under one directory made here, which is
 * removed when the run ends; a run used to leave a few thousand entries in /tmp. Set before the test
 * workers start, so they and their children inherit it (os.tmpdir() and Python's tempfile read TMPDIR).
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'atk-tests-'));
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}
