/**
 * The project's entry points agree with the README: `.ci/run` runs exactly the README's test
 * command on a fresh machine, and package.json has the shape `npx atk` and `npm test` rely on.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../src/util/paths.js';

const read = (file: string): string => readFileSync(join(projectRoot(), file), 'utf8');

/** The shell block that follows `heading` in README.md, as commands (`&&` splits them). */
function readmeCommands(heading: string): string[] {
  const readme = read('README.md');
  const block = /```sh\n([^`]*)```/.exec(readme.slice(readme.indexOf(heading)))![1]!;
  return block.trim().split(/\s*&&\s*|\n/);
}

/** The npm and npx commands `.ci/run` runs, without its quiet flags. */
function ciNpmCommands(): string[] {
  return read('.ci/run')
    .split('\n')
    .filter((line) => /^np[mx] /.test(line))
    .map((line) => line.replace(/ --no-(audit|fund)/g, ''));
}

describe('.ci/run', () => {
  test("returns exactly the README's test commands as its last steps", () => {
    expect(readmeCommands('## Contributing and license')).toStrictEqual([
      'npm ci',
      'npx atk setup --yes --dev',
      'npm test',
    ]);
    expect(ciNpmCommands()).toStrictEqual(readmeCommands('## Contributing and license'));
  });

  test('returns Node 22 as a package dependency, and atk setup --dev installing the apt packages the trainer and the tests need', async () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies.node).toMatch(/^\^22\./);
    expect(read('bin/atk')).toContain('if (major < 22)');
    const { RUNTIME_PACKAGES, DEV_PACKAGES } = await import('../src/setup/plan.js');
    expect([...RUNTIME_PACKAGES, ...DEV_PACKAGES]).toEqual(
      expect.arrayContaining(['python3-torch', 'libopenblas0-pthread', 'bubblewrap', 'python3-pytest', 'chromium']),
    );
  });
});

describe('package.json', () => {
  test('returns an ESM package for Node >= 18 whose bin is bin/atk, built by prepare, tested by vitest and pytest', () => {
    const pkg = JSON.parse(read('package.json')) as {
      type: string;
      bin: Record<string, string>;
      engines: Record<string, string>;
      scripts: Record<string, string>;
    };
    expect({
      type: pkg.type,
      bin: pkg.bin,
      node: pkg.engines.node,
      prepare: pkg.scripts.prepare,
      bench: pkg.scripts.bench,
    }).toStrictEqual({
      type: 'module',
      bin: { atk: 'bin/atk' },
      node: '>=18',
      prepare: 'npm run build',
      bench: 'node scripts/bench.mjs',
    });
    expect(pkg.scripts.test).toMatch(/vitest run.*pytest/);
    expect(JSON.parse(read('tsconfig.json')).compilerOptions.strict).toBe(true);
  });
});
