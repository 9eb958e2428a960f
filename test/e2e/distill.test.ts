/**
 * On-policy distillation end to end through the built CLI (recipes/quickstart-distill.yaml): a short quickstart
 * run exported as the teacher, then the base model distilled from it must come closer to the teacher on held-out
 * prompts: the eval's reverse KL to the teacher (teacher_reverse_kl, the eval split's greedy episodes scored by
 * the teacher) falls from before training to after. A teacher whose tokenizer differs is refused before any step.
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/util/paths.js';
import { atkRun, BIN, onlyRun, readJsonl, tempRunsDir } from './run-helpers.js';

const runsDir = tempRunsDir();
afterAll(() => rmSync(runsDir, { recursive: true, force: true }));
/** Small steps: the teacher needs only to differ from the base model, the student only to move towards it. */
const STEPS = ['train.tasks_per_step=8', 'algorithm.group_size=8', 'dataset.eval_limit=40'];

describe('algorithm distill', () => {
  it('moves the student towards the teacher: the held-out reverse KL to the teacher falls', async () => {
    const taught = await atkRun(
      [
        'recipes/quickstart.yaml',
        'name=teacher',
        'train.steps=3',
        'train.eval_before=false',
        'train.eval_after=false',
        '--no-tui',
        ...STEPS,
      ],
      runsDir,
      600_000,
    );
    expect(taught.exitCode, taught.stderr).toBe(0);
    const teacher = join(runsDir, 'teacher-model');
    const exported = await execa('node', [BIN, 'export', onlyRun(runsDir, 'teacher'), teacher], { reject: false });
    expect(exported.exitCode, exported.stderr).toBe(0);

    const run = await atkRun(
      ['recipes/quickstart-distill.yaml', `teacher.path=${teacher}`, 'train.steps=2', '--no-tui', ...STEPS],
      runsDir,
      600_000,
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const lines = readJsonl(join(onlyRun(runsDir, 'quickstart-distill'), 'metrics.jsonl'));
    const evals = lines.filter((l) => l.kind === 'eval').map((l) => l.teacher_reverse_kl as number);
    const steps = lines.filter((l) => l.kind === 'train');
    expect(steps.map((l) => typeof l['distill/reverse_kl'])).toStrictEqual(['number', 'number']);
    expect(evals).toHaveLength(2);
    console.log(
      `teacher_reverse_kl on held-out prompts: ${evals[0]!.toFixed(4)} before, ${evals[1]!.toFixed(4)} after`,
    );
    expect(evals[1]!).toBeLessThan(evals[0]!);
  }, 1_200_000);

  it("rejects a teacher whose tokenizer is not the student's, naming teacher.path", async () => {
    const other = join(runsDir, 'other-tokenizer');
    cpSync(join(projectRoot(), 'models', 'tiny-arith'), other, { recursive: true });
    const file = join(other, 'tokenizer.json');
    const json = JSON.parse(readFileSync(file, 'utf8')) as { model: { vocab: Record<string, number> } };
    const [a, b] = Object.keys(json.model.vocab);
    [json.model.vocab[a!], json.model.vocab[b!]] = [json.model.vocab[b!]!, json.model.vocab[a!]!];
    writeFileSync(file, JSON.stringify(json));
    const run = await atkRun(
      ['recipes/quickstart-distill.yaml', `teacher.path=${other}`, 'train.steps=1', '--no-tui'],
      runsDir,
    );
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.split('\n')[0]).toMatch(
      /^teacher\.path: the teacher's tokenizer is not the student's: the vocabularies differ/,
    );
  }, 300_000);
});
