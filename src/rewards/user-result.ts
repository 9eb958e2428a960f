import type { RewardResult } from './types.js';

/**
 * Reads what a user's reward (module function or command) gave back: a number, or a record of
 * named parts. A record with a numeric `score` uses it and logs the other numbers as parts; a
 * record without one scores the sum of its parts.
 * @throws Error naming `where` when the value is neither (the episode is then recorded as failed).
 */
export function userRewardResult(value: unknown, where: string): RewardResult {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`${where} returned ${value}, not a finite number`);
    return value;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`${where} returned ${describe(value)}; return a number or a record of named numbers`);
  const { score, ...rest } = value as Record<string, unknown>;
  const parts: Record<string, number> = {};
  for (const [key, part] of Object.entries(rest)) {
    if (typeof part !== 'number' || !Number.isFinite(part))
      throw new Error(`${where} returned part '${key}' = ${describe(part)}; parts must be finite numbers`);
    parts[key] = part;
  }
  if (score === undefined) {
    if (Object.keys(parts).length === 0) throw new Error(`${where} returned an empty record`);
    return { score: Object.values(parts).reduce((a, b) => a + b, 0), parts };
  }
  if (typeof score !== 'number' || !Number.isFinite(score))
    throw new Error(`${where} returned score = ${describe(score)}; it must be a finite number`);
  return { score, parts };
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value);
  return Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : String(value);
}
