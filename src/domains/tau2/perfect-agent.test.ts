import { describe, expect, test } from 'vitest';
import { fullOrSlice } from '../../__fixtures__/test-data.js';
import { dataDir } from '../../util/paths.js';
import type { Tau2Domain } from './db.js';
import { domainSpec, newEpisodeDb } from './domain.js';
import { evaluateEpisode } from './evaluator.js';
import { firstEffectiveWrite, runPerfectAgent } from './perfect-agent.js';
import { loadTau2Tasks, type Tau2Release } from './tasks.js';

const cases: [Tau2Domain, Tau2Release, number][] = [
  ['airline', 'current', fullOrSlice(50, 7)],
  ['airline', '2025-06-10', fullOrSlice(50, 7)],
  ['retail', 'current', fullOrSlice(114, 11)],
  ['retail', '2025-06-10', fullOrSlice(114, 11)],
];

describe('runPerfectAgent', () => {
  test.each(cases)('returns reward 1 on every %s task (%s release)', async (domain, release, count) => {
    const spec = domainSpec(domain, release);
    const tasks = await loadTau2Tasks(dataDir(), domain, release, 'all');
    const failing: string[] = [];
    for (const task of tasks) {
      const db = await newEpisodeDb(spec, dataDir());
      const result = await evaluateEpisode({ task, spec, db, ...runPerfectAgent(task, spec, db) });
      if (result.reward !== 1) failing.push(task.id);
    }
    expect({ tasks: tasks.length, failing }).toStrictEqual({ tasks: count, failing: [] });
  });

  test.each(cases)(
    'returns 0 when one argument of a %s write action is corrupted (%s release)',
    async (domain, release) => {
      const spec = domainSpec(domain, release);
      const scoredOne: string[] = [];
      for (const task of await loadTau2Tasks(dataDir(), domain, release, 'all')) {
        const db = await newEpisodeDb(spec, dataDir());
        const write = firstEffectiveWrite(task, spec, db);
        if (write < 0) continue;
        const result = await evaluateEpisode({
          task,
          spec,
          db,
          ...runPerfectAgent(task, spec, db, { corruptAction: write }),
        });
        if (result.reward !== 0) scoredOne.push(task.id);
      }
      // Retail task 22 changes the user's address and changes it back with its last action, so
      // the first change leaves no trace in the final state the DB check compares.
      expect(scoredOne).toStrictEqual(domain === 'retail' ? ['22'] : []);
    },
  );

  test.each(cases)(
    'returns 0 when the message with the %s communicate_info is skipped (%s release)',
    async (domain, release) => {
      const spec = domainSpec(domain, release);
      const scores: number[] = [];
      for (const task of await loadTau2Tasks(dataDir(), domain, release, 'all')) {
        if ((task.evaluation_criteria?.communicate_info ?? []).length === 0) continue;
        const db = await newEpisodeDb(spec, dataDir());
        const episode = runPerfectAgent(task, spec, db, { skipMessage: true });
        scores.push((await evaluateEpisode({ task, spec, db, ...episode, basis: 'judge_free' })).reward);
      }
      expect(scores.length).toBeGreaterThan(0);
      expect(scores.every((s) => s === 0)).toBe(true);
    },
  );
});
