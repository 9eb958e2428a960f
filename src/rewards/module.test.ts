import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { episodeOutcome } from '../__fixtures__/episode-outcome.js';
import { moduleReward } from './module.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-reward-module-'));
writeFileSync(
  join(dir, 'grade.ts'),
  `import type { EpisodeOutcome } from './types';
export function grade(outcome: { task: { answer?: unknown }; finalText: string; toolCalls: readonly unknown[] }, options: { bonus?: number }) {
  const correct = outcome.finalText.includes(String(outcome.task.answer)) ? 1 : 0;
  return { correct, used_tools: outcome.toolCalls.length > 0 ? (options.bonus ?? 0.1) : 0 };
}
export async function scored(outcome: { finalText: string }) {
  return { score: outcome.finalText.length, chars: outcome.finalText.length };
}
export default (outcome: { finalText: string }) => (outcome.finalText === '42' ? 1 : 0);
export const broken = () => ({ correct: 'yes' });
export const notAFunction = 3;
`,
);
writeFileSync(join(dir, 'types.ts'), 'export type EpisodeOutcome = unknown;\n');
const ctx = { recipeDir: dir, warn: () => undefined };

describe('moduleReward', () => {
  it('returns the sum of named parts, an explicit score with parts, or a number', async () => {
    const grade = await moduleReward.create({ module: 'grade.ts', export: 'grade', options: { bonus: 0.5 } }, ctx);
    expect(await grade(episodeOutcome('It is 42.'))).toStrictEqual({
      score: 1.5,
      parts: { correct: 1, used_tools: 0.5 },
    });
    const scored = await moduleReward.create({ module: 'grade.ts', export: 'scored' }, ctx);
    expect(await scored(episodeOutcome('abc'))).toStrictEqual({ score: 3, parts: { chars: 3 } });
    const byDefault = await moduleReward.create({ module: 'grade.ts' }, ctx);
    expect(await byDefault(episodeOutcome('42'))).toBe(1);
  });

  it('rejects a result that is not a number or a record of numbers', async () => {
    const broken = await moduleReward.create({ module: 'grade.ts', export: 'broken' }, ctx);
    await expect(broken(episodeOutcome('x'))).rejects.toThrow(
      `grade.ts#broken returned part 'correct' = "yes"; parts must be finite numbers`,
    );
  });

  it('rejects a missing export and an export that is not a function', async () => {
    await expect(moduleReward.create({ module: 'grade.ts', export: 'grad' }, ctx)).rejects.toThrow(
      `${join(dir, 'grade.ts')}: no export 'grad'; it exports broken, default, grade, notAFunction, scored`,
    );
    await expect(moduleReward.create({ module: 'grade.ts', export: 'notAFunction' }, ctx)).rejects.toThrow(
      "export 'notAFunction' is number, not a function",
    );
  });
});
