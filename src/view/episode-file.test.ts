import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RECORDED_TASKS, recordRun } from '../__fixtures__/recorded-run.js';
import { indexEpisodeFile, taskEpisodes } from './episode-file.js';

let root: string;
let runDir: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-episode-file-'));
  runDir = await recordRun(root, { trajectorySteps: 2 });
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('taskEpisodes', () => {
  test('returns exactly what the file index holds for each task, in every step and eval file', async () => {
    const files = [
      join(runDir, 'trajectories', 'step-00001.jsonl'),
      join(runDir, 'trajectories', 'step-00000.jsonl'),
      join(runDir, 'eval', 'step-00000', 'results.jsonl'),
    ];
    for (const file of files) {
      const index = await indexEpisodeFile(file);
      for (const task of [...RECORDED_TASKS.map((t) => t.id), 'no-such-task']) {
        const expected = index.episodes.filter((e) => e.taskId === task);
        expect(await taskEpisodes(file, task), `${file} ${task}`).toStrictEqual(expected);
      }
      expect(index.episodes.length).toBeGreaterThan(0);
    }
  });

  test('returns only records of the task when another holds its id in a tool call, and the last line without a newline', async () => {
    const lines = (await readFile(join(runDir, 'trajectories', 'step-00001.jsonl'), 'utf8')).trim().split('\n');
    const records = lines.map((l) => JSON.parse(l) as { task_id: string; messages: { content: unknown[] }[] });
    const decoy = records.find((r) => r.task_id === 'mul-1')!;
    const call = decoy.messages.flatMap((m) => m.content).find((c) => (c as { toolUse?: unknown }).toolUse) as {
      toolUse: { input: Record<string, unknown> };
    };
    call.toolUse.input = { ...call.toolUse.input, task_id: 'add-1' };
    const file = join(root, 'decoy.jsonl');
    await writeFile(file, [JSON.stringify(decoy), '', ...lines].join('\n')); // a blank line, no final newline
    const index = await indexEpisodeFile(file);
    const found = await taskEpisodes(file, 'add-1');
    expect(found).toStrictEqual(index.episodes.filter((e) => e.taskId === 'add-1'));
    expect(found.map((e) => e.index)).toStrictEqual(
      lines.flatMap((l, i) => (JSON.parse(l).task_id === 'add-1' ? [i + 1] : [])),
    );
    expect(await taskEpisodes(file, 'sub-1')).toStrictEqual(index.episodes.filter((e) => e.taskId === 'sub-1'));
  });
});

describe('indexEpisodeFile', () => {
  test('returns the summary of a line without parsing its token trajectory (the last key, most of the line)', async () => {
    const lines = (await readFile(join(runDir, 'trajectories', 'step-00001.jsonl'), 'utf8')).trim().split('\n');
    // Tokens cut short, as no writer leaves them: a summary read through them would lose the episode.
    const cut = lines[0]!.slice(0, lines[0]!.lastIndexOf(',"trajectory":') + ',"trajectory":{"ids":[1,2'.length);
    const file = join(root, 'unread-tokens.jsonl');
    await writeFile(file, `${[cut, ...lines.slice(1)].join('\n')}\n`);
    const intact = await indexEpisodeFile(join(runDir, 'trajectories', 'step-00001.jsonl'));
    const index = await indexEpisodeFile(file);
    expect(index.episodes).toStrictEqual(intact.episodes);
    expect(await taskEpisodes(file, intact.episodes[0]!.taskId)).toStrictEqual(
      intact.episodes.filter((e) => e.taskId === intact.episodes[0]!.taskId),
    );
  });
});
