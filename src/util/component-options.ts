import type { z } from 'zod';
import { ConfigError } from '../errors/index.js';

/**
 * Parse a registered component's free-form `options` (tool, reward, dataset) with its zod schema,
 * reporting every problem at once under the recipe path `where` (e.g. `reward.options`).
 * @throws ConfigError with one located issue per schema problem.
 */
export function parseComponentOptions<S extends z.ZodType>(schema: S, options: Readonly<Record<string, unknown>>, where: string): z.infer<S> {
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
