import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { assertBuildCurrent, staleSources } from '../../src/__fixtures__/built-cli.js';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A project tree with `files` (path -> modification time in seconds). */
function tree(files: Record<string, number>): string {
  const root = mkdtempSync(join(tmpdir(), 'atk-built-'));
  made.push(root);
  for (const [path, mtime] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), '');
    utimesSync(join(root, path), mtime, mtime);
  }
  return root;
}

describe('staleSources', () => {
  test('returns nothing when every compiled source has a newer output, skipping tests, fixtures and declarations', () => {
    const root = tree({
      'src/cli/main.ts': 100,
      'src/ui/app.tsx': 100,
      'src/run/resume.test.ts': 500,
      'src/__fixtures__/child.ts': 500,
      'src/view/api-types.d.ts': 500,
      'viewer/main.ts': 100,
      'dist/cli/main.js': 200,
      'dist/ui/app.js': 200,
      'dist/viewer/main.js': 200,
    });
    expect(staleSources(root)).toStrictEqual([]);
    expect(() => assertBuildCurrent(root)).not.toThrow();
  });

  test('returns the sources changed after the build and those with no output', () => {
    const root = tree({
      'src/cli/main.ts': 100,
      'src/run/resume.ts': 300,
      'src/run/new-file.ts': 100,
      'viewer/main.ts': 300,
      'dist/cli/main.js': 200,
      'dist/run/resume.js': 200,
      'dist/viewer/main.js': 200,
    });
    expect(staleSources(root).sort()).toStrictEqual(['src/run/new-file.ts', 'src/run/resume.ts', 'viewer/main.ts']);
    expect(() => assertBuildCurrent(root)).toThrow(
      /^dist\/ is not a build of the current sources \(.*src\/run\/resume\.ts.*\); the e2e tests run the built CLI: run npm run build first/,
    );
  });
});
