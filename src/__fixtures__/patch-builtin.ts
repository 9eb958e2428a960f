import { syncBuiltinESMExports } from 'node:module';

/**
 * Run `body` with one function of a builtin module (node:fs, node:fs/promises) replaced, restoring it
 * after; the code under test's ESM named imports see the replacement through syncBuiltinESMExports. How
 * a second process acting between two file operations, a host without /proc, a filesystem that refuses
 * symlinks or a failing disk looks to the code under test.
 */
export async function withPatched<T extends object, K extends keyof T>(
  module: T,
  name: K,
  replace: (original: T[K]) => T[K],
  body: () => Promise<void>,
): Promise<void> {
  const original = module[name];
  module[name] = replace(original);
  syncBuiltinESMExports();
  try {
    await body();
  } finally {
    module[name] = original;
    syncBuiltinESMExports();
  }
}
