/**
 * The e2e tests run the built CLI (`bin/atk` imports `dist/`), so a build older than the sources would
 * test yesterday's code and could pass where the sources fail. `assertBuildCurrent` refuses that: it
 * costs a directory walk, where building again would cost a compile in `npm test`, which builds first.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { projectRoot } from '../util/paths.js';

/**
 * Throws unless every source the build compiles (src/ as in tsconfig.build.json, and viewer/) has its
 * output in dist/, written after the source was last changed.
 * @throws Error naming the stale sources and the command that rebuilds them.
 */
export function assertBuildCurrent(root: string = projectRoot()): void {
  const stale = staleSources(root);
  if (stale.length === 0) return;
  const shown = stale.slice(0, 5).join(', ');
  const more = stale.length > 5 ? ` and ${stale.length - 5} more` : '';
  throw new Error(
    `dist/ is not a build of the current sources (${shown}${more} changed since it was built, or have no output); ` +
      'the e2e tests run the built CLI: run npm run build first (npm test does)',
  );
}

/** Sources, relative to `root`, whose compiled file in dist/ is missing or older than they are. */
export function staleSources(root: string): string[] {
  const pairs = [
    ...sources(join(root, 'src'), (rel) => !/\.test\.tsx?$/.test(rel) && !rel.startsWith('__fixtures__/')).map(
      (rel) => [join(root, 'src', rel), join(root, 'dist', jsName(rel))] as const,
    ),
    ...sources(join(root, 'viewer'), (rel) => !rel.includes('/')).map(
      (rel) => [join(root, 'viewer', rel), join(root, 'dist', 'viewer', jsName(rel))] as const,
    ),
  ];
  return pairs
    .filter(([source, output]) => !existsSync(output) || statSync(output).mtimeMs < statSync(source).mtimeMs)
    .map(([source]) => relative(root, source));
}

/** TypeScript files under `dir` (relative paths with `/`) that `keep` accepts; declaration files emit nothing. */
function sources(dir: string, keep: (rel: string) => boolean): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((rel) => rel.split('\\').join('/'))
    .filter((rel) => /\.tsx?$/.test(rel) && !rel.endsWith('.d.ts') && !rel.startsWith('node_modules/') && keep(rel))
    .filter((rel) => statSync(join(dir, rel)).isFile());
}

function jsName(rel: string): string {
  return rel.replace(/\.tsx?$/, '.js');
}
