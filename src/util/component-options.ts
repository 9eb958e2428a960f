import { z } from 'zod';
import { ConfigError } from '../errors/index.js';

/**
 * What every registered component (dataset, tool, reward) may declare: the zod schema of its
 * recipe `options`. Loading a recipe (`atk validate`, and `atk run` before the run directory
 * exists) parses the options with it, and the component's own build parses them with the same
 * schema, so a bad option is a located recipe problem before anything starts.
 */
export interface ComponentOptionsSchema {
  readonly options?: z.ZodType;
}

/**
 * Parse a registered component's free-form `options` (tool, reward, dataset) with its zod schema,
 * reporting every problem at once under the recipe path `where` (e.g. `reward.options`).
 * @throws ConfigError with one located issue per schema problem.
 */
export function parseComponentOptions<S extends z.ZodType>(
  schema: S,
  options: Readonly<Record<string, unknown>>,
  where: string,
): z.infer<S> {
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    parsed.error.issues.map((issue) => ({
      file: '<recipe>',
      line: 1,
      col: 1,
      path: [where, ...issue.path.map(String)].join('.'),
      message: issue.message,
    })),
  );
}

/** The options schema of a component that takes none: any key given is an unknown key. */
export const NO_OPTIONS = z.strictObject({});
