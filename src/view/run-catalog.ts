/**
 * The runs a viewer serves: every run directory under the paths it was given (a runs directory, a
 * run name's directory, or run directories themselves), found again on each refresh so that a run
 * started after the viewer appears in it.
 */
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError } from '../errors/index.js';
import { RunIndex } from './run-index.js';

export class RunCatalog {
  private readonly runs = new Map<string, RunIndex>();
  private readonly idsByDir = new Map<string, string>();

  private constructor(private readonly roots: readonly string[]) {}

  /**
   * A catalog of `paths`, read once.
   * @throws InputError when a path does not exist.
   */
  static async open(paths: readonly string[]): Promise<RunCatalog> {
    const roots = paths.map((p) => resolve(p));
    for (const [i, root] of roots.entries()) {
      if (!(await stat(root).catch(() => undefined))?.isDirectory()) {
        throw new InputError(`${paths[i]}: no such directory`, {
          hint: "pass a runs directory (the recipe's output.runs_dir, default runs) or run directories",
        });
      }
    }
    const catalog = new RunCatalog(roots);
    await catalog.refresh();
    return catalog;
  }

  /** Every run, newest start first. */
  list(): RunIndex[] {
    return [...this.runs.values()].sort(
      (a, b) => b.manifest.started_at.localeCompare(a.manifest.started_at) || a.id.localeCompare(b.id),
    );
  }

  get(id: string): RunIndex | undefined {
    return this.runs.get(id);
  }

  /** The id of the run in `dir`, if the catalog holds it. */
  idOf(dir: string): string | undefined {
    return this.idsByDir.get(resolve(dir));
  }

  /**
   * Finds new runs and re-reads changed ones; returns the ids of runs that are new or changed.
   * A directory whose manifest cannot be read is left out until it can.
   */
  async refresh(): Promise<string[]> {
    const changed: string[] = [];
    for (const dir of await this.findRunDirs()) {
      let id = this.idsByDir.get(dir);
      const index = id === undefined ? new RunIndex(this.freshId(dir), dir) : this.runs.get(id)!;
      const didChange = await index.refresh().catch(() => undefined);
      if (didChange === undefined) continue;
      if (id === undefined) {
        id = index.id;
        this.idsByDir.set(dir, id);
        this.runs.set(id, index);
      }
      if (didChange) changed.push(id);
    }
    return changed;
  }

  /** Run directories: a root holding manifest.json, else its children and grandchildren holding one. */
  private async findRunDirs(): Promise<string[]> {
    const found: string[] = [];
    const visit = async (dir: string, depth: number): Promise<void> => {
      if (await isFile(join(dir, 'manifest.json'))) {
        found.push(dir);
        return;
      }
      if (depth === 0) return;
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      // `latest` is a pointer to a version already listed.
      for (const entry of entries)
        if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'latest')
          await visit(join(dir, entry.name), depth - 1);
    };
    for (const root of this.roots) await visit(root, 2);
    return [...new Set(found)];
  }

  /** `name/version`, with `~2`, `~3` added when two roots hold runs of the same name and version. */
  private freshId(dir: string): string {
    const base = `${basename(dirname(dir))}/${basename(dir)}`;
    let id = base;
    for (let n = 2; this.runs.has(id); n++) id = `${base}~${n}`;
    return id;
  }
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}
