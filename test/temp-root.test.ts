import { execFileSync } from 'node:child_process';
import { realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname } from 'node:path';
import { describe, expect, inject, it } from 'vitest';

describe('test temp root', () => {
  it('returns a tmpdir under the run root, which children inherit', () => {
    const root = inject('tempRoot');
    expect(basename(root)).toMatch(/^atk-t-/);
    expect(tmpdir()).toBe(root);
    const child = (code: string, command = process.execPath, flag = '-e'): string =>
      execFileSync(command, [flag, code], { encoding: 'utf8' }).trim();
    expect(child('process.stdout.write(require("node:os").tmpdir())')).toBe(root);
    expect(realpathSync(child('import tempfile; print(tempfile.gettempdir())', 'python3', '-c'))).toBe(
      realpathSync(root),
    );
    // The root sits in the host's temporary directory, with room left for unix socket paths below it.
    expect(dirname(root)).not.toBe(root);
    expect(root.length).toBeLessThan(40);
    // Open like /tmp, since sandboxed programs run as another user below it.
    expect(statSync(root).mode & 0o7777).toBe(0o1777);
  });
});
