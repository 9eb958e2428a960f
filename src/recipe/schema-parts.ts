/** Small zod pieces the recipe schema's sections share. */
import { z } from 'zod';

export const positiveInt = z.number().int().positive();
export const nonNegativeInt = z.number().int().nonnegative();
export const positiveNumber = z.number().positive();

/**
 * A check that exactly one of `keys` is present (a tool is a name, a module or an MCP server), so
 * a recipe that gives two or none gets one clear message instead of a union's guesswork. With
 * `allowNone`, giving none is left to the consumer (which reports it with its own hint).
 */
export function exactlyOne(keys: readonly string[], what: string, allowNone = false) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const given = keys.filter((k) => value[k] !== undefined);
    if (given.length === 1 || (allowNone && given.length === 0)) return;
    ctx.addIssue({
      code: 'custom',
      path: given.length > 1 ? [given[1]!] : [],
      message:
        given.length > 1
          ? `give only one of ${given.join(', ')} for ${what}`
          : `${what} needs one of ${keys.join(', ')}`,
    });
  };
}

/** Free-form options handed to a registered component (tool, reward, dataset). */
export const componentOptions = z.record(z.string(), z.unknown());
