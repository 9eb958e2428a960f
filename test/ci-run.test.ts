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

/** The npm commands `.ci/run` runs, without its quiet flags. */
function ciNpmCommands(): string[] {
  return read('.ci/run')
    .split('\n')
    .filter((line) => /^npm /.test(line))
    .map((line) => line.replace(/ --no-(audit|fund)/g, ''));
}

describe('.ci/run', () => {
  test("returns exactly the README's test commands as its last steps", () => {
    expect(readmeCommands('Run the tests:')).toStrictEqual(['npm ci', 'npm test']);
    expect(ciNpmCommands()).toStrictEqual(readmeCommands('Run the tests:'));
  });

  test('returns Node 22 from the npm registry for an older node, and the apt packages the trainer needs', () => {
    const ci = read('.ci/run');
    expect(ci).toMatch(/if \[ "\$major" -lt 22 \]; then[\s\S]*npm install --prefix "\$node_dir" [^\n]*node@22/);
    const packages = /packages=\(([^)]*)\)/.exec(ci)![1]!.split(' ');
    expect(packages).toEqual(expect.arrayContaining(['python3-torch', 'libopenblas0-pthread', 'python3-pytest']));
    expect(ci).toContain('apt-get install -y');
  });
});

describe('package.json', () => {
  test('returns an ESM package for Node >= 22 whose bin is bin/atk, built by prepare, tested by vitest and pytest', () => {
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
      node: '>=22',
      prepare: 'npm run build',
      bench: 'node scripts/bench.mjs',
    });
    expect(pkg.scripts.test).toMatch(/vitest run.*pytest/);
    expect(JSON.parse(read('tsconfig.json')).compilerOptions.strict).toBe(true);
  });
});
