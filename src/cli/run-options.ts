/**
 * The yargs options of every command that reads a finished or running run by name, so each says
 * the same thing about how a run is looked up.
 */

/** `<run>`: a run directory, or a name (its newest version) / name/v002 under --runs-dir. */
export const runPositional = {
  type: 'string',
  demandOption: true,
  describe: 'Run directory, or name (its newest version) / name/v002 under --runs-dir',
} as const;

/** `--runs-dir`: where runs are looked up by name. */
export const runsDirOption = {
  type: 'string',
  default: 'runs',
  describe: "Directory holding the runs (a recipe's output.runs_dir)",
} as const;
