/**
 * The tests that print or compare paths, run again from a copy of the tree at a short path with a space in
 * it, directly in the host's temporary directory beside the run's temporary root. A path shown relative to
 * the working directory, or an expectation built from where the clone or /tmp happens to be, passes from
 * a clone in the home directory and fails here, as it did for a contributor who cloned under /tmp.
 */
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { execa } from 'execa';
import { describe, expect, inject, test } from 'vitest';
import { projectRoot } from '../src/util/paths.js';

/** Test files whose expectations hold paths the code makes relative to the working directory or the root. */
const PATH_TESTS = [
  'src/recipe',
  'src/cli/validate.test.ts',
  'src/cli/launch.test.ts',
  'src/cli/init.test.ts',
  'src/cli/inspect-trajectory.test.ts',
  'src/runs/list.test.ts',
  'src/util/paths.test.ts',
  'test/temp-root.test.ts',
];

/** Top-level folders a copy of the tree leaves out: installed, built or written by runs, and git's own. */
const NOT_COPIED = new Set(['node_modules', 'dist', '.git', 'runs', 'reports', 'scratch', 'coverage']);

/** Whether `path` (relative to the root) is part of the tree a clone has. */
function inClone(path: string): boolean {
  const parts = path.split(sep);
  return !NOT_COPIED.has(parts[0]!) && !parts.includes('__pycache__');
}

describe('the tests from elsewhere', () => {
  test('returns a pass for the path-printing tests from a copy at a path with a space beside the temporary root', async () => {
    const hostTemp = dirname(inject('tempRoot'));
    const copy = mkdtempSync(join(hostTemp, 'a b-'));
    try {
      const root = projectRoot();
      cpSync(root, copy, {
        recursive: true,
        filter: (source) => inClone(relative(root, source)),
      });
      symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
      // The copy's run makes its own temporary root in the host's temporary directory, a sibling of the copy.
      const run = await execa(
        process.execPath,
        [join(copy, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...PATH_TESTS],
        {
          cwd: copy,
          env: { TMPDIR: hostTemp, CI: 'true', NO_COLOR: '1' },
          reject: false,
          all: true,
        },
      );
      expect(run.exitCode, String(run.all)).toBe(0);
      expect(String(run.all)).toMatch(/Test Files {2}\d+ passed/);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
