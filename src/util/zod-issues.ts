import type { z } from 'zod';

/** A zod error on one line, `path: message` per issue, for error messages that must stay one line. */
export function formatZodIssues(error: z.ZodError, root: string): string {
  return error.issues.map((issue) => `${issue.path.join('.') || root}: ${issue.message}`).join('; ');
}
