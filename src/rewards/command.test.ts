import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { episodeOutcome } from '../__fixtures__/episode-outcome.js';
import { commandReward } from './command.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-reward-command-'));
// Real Python graders, as users write them: the episode on stdin, the score on stdout.
writeFileSync(
  join(dir, 'grade.py'),
  `import json, sys
episode = json.load(sys.stdin)
correct = str(episode["task"]["answer"]) in episode["final_text"]
if sys.argv[1:] == ["parts"]:
    print(json.dumps({"correct": 1.0 if correct else 0.0, "calls": len(episode["tool_calls"]), "level_easy": 1 if episode["task"]["data"]["level"] == "easy" else 0}))
else:
    print(1 if correct else 0)
`,
);
writeFileSync(join(dir, 'slow.py'), 'import time\ntime.sleep(30)\n');
writeFileSync(join(dir, 'crash.py'), 'import sys\nsys.stderr.write("grader bug: KeyError answer\\n")\nsys.exit(2)\n');
writeFileSync(join(dir, 'chatty.py'), 'print("the answer looks right")\n');
const ctx = { recipeDir: dir, warn: () => undefined };
const python = '/usr/bin/python3';

describe('commandReward', () => {
  it('returns the number a command prints for the episode JSON on its stdin', async () => {
    const reward = await commandReward.create({ command: [python, 'grade.py'] }, ctx);
    expect(await reward(episodeOutcome('The answer is 42.'))).toBe(1);
    expect(await reward(episodeOutcome('The answer is 41.'))).toBe(0);
  });

  it("returns the score of the command in its cwd, not the top recipe's folder, when one is given", async () => {
    // The base recipe's folder holds grade.py; the top recipe's folder (ctx.recipeDir) holds none.
    const reward = await commandReward.create(
      { command: [python, 'grade.py'], cwd: dir },
      { ...ctx, recipeDir: tmpdir() },
    );
    expect(await reward(episodeOutcome('The answer is 42.'))).toBe(1);
  });

  it('returns named parts from a JSON record', async () => {
    const reward = await commandReward.create({ command: [python, 'grade.py', 'parts'] }, ctx);
    expect(await reward(episodeOutcome('42'))).toStrictEqual({
      score: 3,
      parts: { correct: 1, calls: 1, level_easy: 1 },
    });
  });

  it('rejects a command that times out, fails, prints no number, or cannot run', async () => {
    await expect(
      (await commandReward.create({ command: [python, 'slow.py'], timeout_s: 0.3 }, ctx))(episodeOutcome('x')),
    ).rejects.toThrow(`reward command '${python} slow.py' timed out after 0.3 s`);
    await expect(
      (await commandReward.create({ command: [python, 'crash.py'] }, ctx))(episodeOutcome('x')),
    ).rejects.toThrow(`reward command '${python} crash.py' exited with 2: grader bug: KeyError answer`);
    await expect(
      (await commandReward.create({ command: [python, 'chatty.py'] }, ctx))(episodeOutcome('x')),
    ).rejects.toThrow(`reward command '${python} chatty.py' printed "the answer looks right"; print a number or JSON`);
    await expect(
      (await commandReward.create({ command: ['./no-such-grader'] }, ctx))(episodeOutcome('x')),
    ).rejects.toThrow("reward command './no-such-grader' could not run: spawn ./no-such-grader ENOENT");
  });
});
