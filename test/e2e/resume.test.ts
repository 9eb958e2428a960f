/**
 * `atk run --resume` after SIGKILLs timed by what the run writes (a checkpoint committed, a step's
 * trajectories, a step's rollouts started), never by the clock: every resume finishes, each completed
 * step is recorded exactly once, and training goes on from the checkpoint's weights and optimizer state.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { datasetContext } from '../../src/datasets/context.js';
import { datasets } from '../../src/datasets/index.js';
import { loadRecipe } from '../../src/recipe/index.js';
import { epochStream, tasksForStep } from '../../src/rollout/task-stream.js';
import { hasRewardSpread } from '../../src/algorithms/advantages.js';
import { DATA_STATE_FILE } from '../../src/run/data-state.js';
import { readTrajectoryFile } from '../../src/ui/trajectory/record.js';
import { CHECKPOINT_MARKER, LOCK_FILE, stepName } from '../../src/runs/index.js';
import { projectRoot } from '../../src/util/paths.js';
import '../../src/builtins.js';
import { BIN, python, readJson, readJsonl, tempRunsDir } from './run-helpers.js';
import { expectWindowedEpisode, segmentsOf } from './windowed-episodes.js';

const STEPS = 4;
const OVERRIDES = [
  `train.steps=${STEPS}`,
  'train.save_every=1',
  'train.tasks_per_step=2',
  'algorithm.group_size=4',
  'dataset.eval_limit=4',
];
const RECIPE = 'recipes/smoke/quickstart.yaml';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh runs directory, removed after the tests. */
function runsDir(): string {
  const dir = tempRunsDir();
  made.push(dir);
  return dir;
}

/** What a run directory shows while its run goes on; the kill moments below are these. */
type Sign = (dir: string) => boolean;

/** The version directory has been created (the trainer is still starting). */
const created: Sign = (dir) => existsSync(join(dir, 'manifest.json'));
/** Step `step`'s trajectories are on disk (its checkpoint may not be). */
const recorded =
  (step: number): Sign =>
  (dir) =>
    existsSync(join(dir, 'trajectories', `${stepName(step)}.jsonl`));
/** The checkpoint after `step` is committed (its marker is written last, atomically). */
const committed =
  (step: number): Sign =>
  (dir) =>
    existsSync(join(dir, 'checkpoints', stepName(step), CHECKPOINT_MARKER));
/** Collection of step `step`'s rollouts has begun (logs/collect.jsonl has its line). */
const collecting =
  (step: number): Sign =>
  (dir) =>
    readJsonlSafe(join(dir, 'logs', 'collect.jsonl')).some((l) => l.step === step);

/** The lines of a JSONL file that parse (a line being written may be torn). */
function readJsonlSafe(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/** The single version directory under `runsDir` once `atk run` has made it (the run named `name`). */
function versionDir(runsDir: string, name = 'smoke-quickstart'): string | undefined {
  const root = join(runsDir, name);
  const version = existsSync(root) ? readdirSync(root).find((v) => /^v\d+$/.test(v)) : undefined;
  return version === undefined ? undefined : join(root, version);
}

/** The pids every kill left in a writer lock; each resume must take those locks over without --force. */
const killedHolders: number[] = [];

/**
 * Run `atk run args` and SIGKILL the real atk (the writer lock's holder: under Node < 22 `bin/atk` is a
 * wrapper whose own SIGKILL lets atk end cleanly) as soon as the run directory (found by `dir`) shows
 * `sign`; resolves once the process is gone with whether it was killed (false: it ended first, the sign
 * never showed). The killed atk's lock must stay behind, naming it.
 */
async function runUntil(args: readonly string[], dir: () => string | undefined, sign: Sign): Promise<boolean> {
  const child = execa('node', [BIN, 'run', ...args], { reject: false, cwd: projectRoot(), env: { CI: 'true' } });
  let ended = false;
  void child.then(() => {
    ended = true;
  });
  let holder: number | undefined;
  for (;;) {
    const at = dir();
    holder = at === undefined ? undefined : lockHolder(at);
    if (at !== undefined && holder !== undefined && sign(at)) break;
    if (ended) return false;
    await sleep(20);
  }
  process.kill(holder, 'SIGKILL');
  await child;
  expect(lockHolder(dir()!)).toBe(holder);
  killedHolders.push(holder);
  return true;
}

/** The pid in a run directory's writer lock, when one is there and whole. */
function lockHolder(dir: string): number | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as { pid: number }).pid;
  } catch {
    return undefined;
  }
}

/** Each killed holder's lock was taken over (noted in the manifest) and the finished run holds none. */
function expectLocksTakenOver(dir: string): void {
  const notes = (readJson(join(dir, 'manifest.json')).status_history as { message?: string }[])
    .map((h) => h.message?.match(/^took over the writer lock of atk pid (\d+) on .*: that process is gone$/)?.[1])
    .filter((pid) => pid !== undefined)
    .map(Number);
  expect(notes).toStrictEqual(killedHolders.splice(0));
  expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
}

/** `atk run --resume dir` to the end. */
function resume(dir: string) {
  return execa('node', [BIN, 'run', '--resume', dir], { reject: false, cwd: projectRoot(), env: { CI: 'true' } });
}

/**
 * A new run of `recipe` (the smoke quickstart, named `name`) with `overrides`, SIGKILLed when its
 * directory shows `signs[0]`, then resumed and SIGKILLed at each later sign, then resumed to the end.
 * Fails if a sign never showed.
 */
async function killAndResume(
  overrides: readonly string[],
  signs: readonly Sign[],
  recipe = { file: RECIPE, name: 'smoke-quickstart', overrides: OVERRIDES },
) {
  const runs = runsDir();
  const args = [recipe.file, ...recipe.overrides, ...overrides, `output.runs_dir=${runs}`];
  expect(await runUntil(args, () => versionDir(runs, recipe.name), signs[0]!)).toBe(true);
  const dir = versionDir(runs, recipe.name)!;
  for (const sign of signs.slice(1)) expect(await runUntil(['--resume', dir], () => dir, sign)).toBe(true);
  return { dir, final: await resume(dir) };
}

describe('atk run --resume', () => {
  it('returns a complete run after SIGKILLs in start-up, between a step and its checkpoint, at a checkpoint and in rollouts, with every step recorded once', async () => {
    const { dir, final } = await killAndResume(
      [],
      // Each sign lies ahead of what the kill before it could have left: killed at step 2's checkpoint, the
      // run may already log step 3's collection, but not step 4's, which waits for step 3's update.
      [created, recorded(1), committed(2), collecting(4)],
    );
    expect([final.exitCode, final.stderr]).toStrictEqual([0, '']);
    expectLocksTakenOver(dir);

    expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    const train = metrics.filter((l) => l.kind === 'train');
    expect(train.map((l) => l.step)).toStrictEqual([1, 2, 3, 4]);
    // Each step trained the policy the step before it left, across every resume: one version further
    // when it trained (a step whose groups all tied trains nothing), and its episodes sampled by that policy.
    let version = 0;
    for (const line of train) {
      const sampled = readJsonl(join(dir, 'trajectories', `${stepName(line.step as number)}.jsonl`));
      expect(new Set(sampled.map((r) => r.policy_version))).toStrictEqual(new Set([version]));
      if (line['train/policy_version'] !== undefined) version++;
      expect([line.step, line.policy_version, line['train/policy_version'] ?? version]).toStrictEqual([
        line.step,
        version,
        version,
      ]);
    }
    const evals = metrics.filter((l) => l.kind === 'eval').map((l) => l.step);
    expect(new Set(evals).size).toBe(evals.length);
    expect(evals).toContain(STEPS);

    const files = readdirSync(join(dir, 'trajectories'));
    expect(files.sort()).toStrictEqual([1, 2, 3, 4].map((s) => `${stepName(s)}.jsonl`));
    for (const file of files) {
      const records = readJsonl(join(dir, 'trajectories', file));
      const keys = records.map((r) => `${r.group}/${r.sample}`);
      expect(new Set(keys).size).toBe(records.length);
      expect(records.length).toBe(2 * 4);
    }

    // Resuming a finished run repeats nothing: its evals (before and after training) are already recorded.
    const again = await resume(dir);
    expect(again.exitCode).toBe(0);
    expect(readJsonl(join(dir, 'metrics.jsonl'))).toStrictEqual(metrics);
  }, 600_000);

  it('returns a complete run after SIGKILLs with rollouts collected ahead (max_staleness 1): steps once, episodes of untrained steps counted, the data order of the steps that trained', async () => {
    // The first kill in the first step's rollouts, the second while a later step's rollouts run ahead of training.
    // No evals: the other tests check them, and each costs a greedy pass.
    const { dir, final } = await killAndResume(
      ['rollout.max_staleness=1', 'train.eval_before=false', 'train.eval_after=false'],
      [collecting(1), collecting(3)],
    );
    expect([final.exitCode, final.stderr]).toStrictEqual([0, '']);
    expectLocksTakenOver(dir);

    expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    const train = metrics.filter((l) => l.kind === 'train');
    expect(train.map((l) => l.step)).toStrictEqual([1, 2, 3, 4]);
    expect(train.every((l) => (l.staleness_max as number) <= 1)).toBe(true);
    // Each resume that found episodes of steps after its checkpoint counted them once.
    const resumes = metrics.filter((l) => l.kind === 'resume');
    expect(resumes.length).toBeGreaterThan(0);
    for (const line of resumes) expect(line.discarded_episodes).toBeGreaterThan(0);

    // Whatever was killed and collected again, each step trained on the tasks the data order gives it.
    const { recipe } = await loadRecipe(join(dir, 'resolved.yaml'));
    const tasks = await (await datasets.get(recipe.dataset.name)).load(
      recipe.dataset.split,
      datasetContext(recipe, dir),
    );
    for (const step of [1, 2, 3, 4]) {
      const records = readJsonl(join(dir, 'trajectories', `${stepName(step)}.jsonl`));
      expect(records.map((r) => `${r.group}/${r.sample}`).sort()).toStrictEqual([
        '0/0',
        '0/1',
        '0/2',
        '0/3',
        '1/0',
        '1/1',
        '1/2',
        '1/3',
      ]);
      const byGroup = [0, 1].map((g) => [...new Set(records.filter((r) => r.group === g).map((r) => r.task_id))]);
      expect(byGroup).toStrictEqual(tasksForStep(tasks, recipe.seed, step - 1, 2).map((t) => [t.id]));
    }
  }, 600_000);

  it('returns a complete run after SIGKILLs with dynamic sampling and rollouts collected ahead: every step drew on where the one before left the data stream, dropped groups counted', async () => {
    const { dir, final } = await killAndResume(
      [
        'algorithm.dynamic_sampling.max_rounds=3',
        'rollout.max_staleness=1',
        'train.eval_before=false',
        'train.eval_after=false',
      ],
      [collecting(2), committed(3)],
    );
    expect([final.exitCode, final.stderr]).toStrictEqual([0, '']);
    expectLocksTakenOver(dir);
    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    const train = metrics.filter((l) => l.kind === 'train');
    expect(train.map((l) => l.step)).toStrictEqual([1, 2, 3, 4]);

    // The groups every step sampled, kept or dropped, in the order drawn (a group's index is its place in the step's draws).
    const { recipe } = await loadRecipe(join(dir, 'resolved.yaml'));
    const tasks = await (await datasets.get(recipe.dataset.name)).load(
      recipe.dataset.split,
      datasetContext(recipe, dir),
    );
    let position = 0;
    for (const line of train) {
      const records = readJsonl(join(dir, 'trajectories', `${stepName(line.step as number)}.jsonl`));
      const groups = [...new Set(records.map((r) => r.group as number))].sort((a, b) => a - b);
      expect(groups).toStrictEqual(groups.map((_, i) => i));
      const members = groups.map((g) => records.filter((r) => r.group === g));
      for (const group of members) expect(group.length).toBe(4);
      // Whatever was killed and drawn again, the step's tasks are the stream's next ones after the step before.
      const drawn = members.map((group) => [...new Set(group.map((r) => r.task_id))]);
      expect(drawn).toStrictEqual(
        epochStream(tasks, recipe.seed)
          .slice(position, position + groups.length)
          .map((t) => [t.id]),
      );
      position += groups.length;
      // Trained: the groups with a reward spread, the others dropped; refilled until 2 were kept or 3 rounds ran.
      const spread = members.filter((group) =>
        hasRewardSpread(group.map((r) => ({ reward: r.reward as number, excluded: false }))),
      );
      const trained = members.filter((group) => group.some((r) => r.advantage !== null));
      expect(trained.length).toBeLessThanOrEqual(spread.length);
      expect([
        line['dynamic_sampling/groups_sampled'],
        line['dynamic_sampling/groups_kept'],
        line['data/position'],
      ]).toStrictEqual([groups.length, spread.length, position]);
      expect(
        spread.length === 2 || (line['dynamic_sampling/ran_out'] === 1 && line['dynamic_sampling/rounds'] === 3),
      ).toBe(true);
    }
    // The last checkpoint saved where the stream stood.
    expect(readJson(join(dir, 'checkpoints', stepName(STEPS), DATA_STATE_FILE))).toStrictEqual({
      position,
      curriculum: {},
    });
  }, 600_000);

  it('returns a complete run of episodes split by a sliding window after SIGKILLs between a step and its checkpoint and in rollouts: every step drew on where the one before left the data stream, and every episode keeps its segments', async () => {
    const steps = 3;
    const { dir, final } = await killAndResume([], [recorded(1), collecting(3)], {
      file: 'recipes/smoke/long-episode.yaml',
      name: 'smoke-long-episode',
      overrides: [
        `train.steps=${steps}`,
        'train.save_every=1',
        'train.tasks_per_step=2',
        'algorithm.group_size=2',
        // Groups of one greedy and one sampled conversation seldom differ, so steps draw more tasks than
        // 2: the data stream's cursor is then the checkpoint's to give back, not the step count's.
        'algorithm.dynamic_sampling.max_rounds=2',
        'dataset.limit=6',
        'train.eval_before=false',
        'train.eval_after=false',
      ],
    });
    expect([final.exitCode, final.stderr]).toStrictEqual([0, '']);
    expectLocksTakenOver(dir);
    const train = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
    expect(train.map((l) => l.step)).toStrictEqual([1, 2, 3]);

    const { recipe } = await loadRecipe(join(dir, 'resolved.yaml'));
    const { context } = recipe.agent;
    if (context.strategy !== 'sliding_window') throw new Error(`the smoke's strategy is ${context.strategy}`);
    const windowed = { budgetTokens: context.budget_tokens!, keepLastTurns: context.keep_last_turns };
    const tasks = (
      await (await datasets.get(recipe.dataset.name)).load(recipe.dataset.split, datasetContext(recipe, dir))
    ).slice(0, recipe.dataset.limit);
    let position = 0;
    for (const line of train) {
      const step = line.step as number;
      const records = (await readTrajectoryFile(join(dir, 'trajectories', `${stepName(step)}.jsonl`))).map(
        (l) => l.record,
      );
      const groups = [...new Set(records.map((r) => r.group))].sort((a, b) => a - b);
      expect(groups).toStrictEqual(groups.map((_, i) => i));
      const members = groups.map((g) => records.filter((r) => r.group === g));
      for (const group of members) expect(group.map((r) => r.sample).sort()).toStrictEqual([0, 1]);
      // Whatever was killed and drawn again, the step's tasks are the stream's next ones after the step before.
      expect(members.map((group) => [...new Set(group.map((r) => r.task_id))])).toStrictEqual(
        epochStream(tasks, recipe.seed)
          .slice(position, position + groups.length)
          .map((t) => [t.id]),
      );
      position += groups.length;
      expect(line['data/position']).toBe(position);
      // Every episode, resumed steps' too, was split exactly when a prompt passed the budget, kept each
      // segment whole and dropped the turns the window left out; each step had conversations that passed it.
      for (const record of records) expectWindowedEpisode(record, windowed);
      expect(records.filter((r) => segmentsOf(r) > 1).length).toBeGreaterThan(0);
      // The step's figures count the segments its trajectory file holds, so no episode lost or doubled
      // one, and every segment of an episode with an advantage went to the trainer.
      const perEpisode = records.reduce((n, r) => n + segmentsOf(r), 0) / records.length;
      const rewrites = records.reduce((n, r) => n + segmentsOf(r) - 1, 0) / records.length;
      const dropped = records.reduce((n, r) => n + (r.stats.contextDroppedTokens ?? 0), 0) / records.length;
      const trained = records.filter((r) => r.advantage !== null).reduce((n, r) => n + segmentsOf(r), 0);
      expect([
        line['segments/per_episode'],
        line['segments/rewrites/sliding_window'] ?? 0,
        line['segments/context_dropped_tokens'],
        line['train/sequences'] ?? 0,
      ]).toStrictEqual([perEpisode, rewrites, dropped, trained]);
    }
    // Steps refilled, so a resume that lost the cursor would have drawn other tasks.
    expect(position).toBeGreaterThan(steps * 2);
    expect(readJson(join(dir, 'checkpoints', stepName(steps), DATA_STATE_FILE))).toStrictEqual({
      position,
      curriculum: {},
    });
  }, 600_000);

  it('returns the weights and optimizer state of an uninterrupted run with the same seed when killed as its first checkpoint is committed', async () => {
    const steps = 3;
    const overrides = [...OVERRIDES, `train.steps=${steps}`, 'train.eval_before=false', 'train.eval_after=false'];
    const [killedRuns, wholeRuns] = [runsDir(), runsDir()];
    const whole = execa('node', [BIN, 'run', RECIPE, ...overrides, `output.runs_dir=${wholeRuns}`], {
      reject: false,
      cwd: projectRoot(),
      env: { CI: 'true' },
    });
    expect(
      await runUntil(
        [RECIPE, ...overrides, `output.runs_dir=${killedRuns}`],
        () => versionDir(killedRuns),
        committed(1),
      ),
    ).toBe(true);
    const dir = versionDir(killedRuns)!;
    // The newest committed checkpoint when the kill landed: the resume must go on from it.
    const from = Math.max(...[1, 2, 3].filter((s) => committed(s)(dir)));
    expect(from).toBeLessThan(steps);
    const resumed = await resume(dir);
    expect([resumed.exitCode, resumed.stderr]).toStrictEqual([0, '']);
    expectLocksTakenOver(dir);
    expect([(await whole).exitCode, (await whole).stderr]).toStrictEqual([0, '']);
    const wholeDir = versionDir(wholeRuns)!;

    // The first resumed step sampled with the checkpoint's policy and trained it into the next version,
    // as the uninterrupted run's same step did, at the learning rate of that step of the schedule (the
    // scheduler's state came back too).
    const trainLines = (d: string) => readJsonl(join(d, 'metrics.jsonl')).filter((l) => l.kind === 'train');
    const saved = trainLines(dir).find((l) => l.step === from)!.policy_version as number;
    const first = trainLines(dir).find((l) => l.step === from + 1)!;
    const expected = trainLines(wholeDir).find((l) => l.step === from + 1)!;
    const facts = (l: Record<string, unknown>) => [l.policy_version, l['train/policy_version'], l['train/lr']];
    expect(facts(first)).toStrictEqual([saved + 1, saved + 1, expected['train/lr']]);
    expect(facts(first)).toStrictEqual(facts(expected));
    const sampled = readJsonl(join(dir, 'trajectories', `${stepName(from + 1)}.jsonl`)).map((r) => r.policy_version);
    expect(new Set(sampled)).toStrictEqual(new Set([saved]));

    // The final checkpoints agree: counters exactly, the weights and Adam's moments up to the float
    // noise of summing a batch in another order (a resume from the base weights is off by ~1e-4).
    const diff = await compareCheckpoints(
      join(dir, 'checkpoints', stepName(steps)),
      join(wholeDir, 'checkpoints', stepName(steps)),
    );
    expect(diff.counters[0]).toStrictEqual(diff.counters[1]);
    expect(diff.counters[0]).toStrictEqual({
      step: steps,
      policy_version: steps,
      scheduler: steps,
      adam_steps: [steps],
    });
    expect(diff.keys).toBe(true);
    expect(diff.weights).toBeLessThan(2e-5);
    expect(diff.optimizer).toBeLessThan(1e-6);
  }, 600_000);
});

interface CheckpointDiff {
  /** Both checkpoints hold the same weight tensors and optimizer state entries. */
  readonly keys: boolean;
  /** Largest absolute difference of any weight. */
  readonly weights: number;
  /** Largest absolute difference of any optimizer state tensor (Adam's moments). */
  readonly optimizer: number;
  /** The trainer's counters in each checkpoint. */
  readonly counters: readonly {
    step: number;
    policy_version: number;
    scheduler: number;
    adam_steps: number[];
  }[];
}

/** Compare two checkpoint directories written by the trainer, reading them with its own loader. */
async function compareCheckpoints(a: string, b: string): Promise<CheckpointDiff> {
  const code = `
import json, sys, torch
from atk_trainer.model.safetensors_io import load_dir
from atk_trainer.train.checkpoint import STATE_FILE
def read(d):
    return load_dir(d), torch.load(d + "/" + STATE_FILE, map_location="cpu", weights_only=False)
(wa, sa), (wb, sb) = read(sys.argv[1]), read(sys.argv[2])
oa, ob = sa["optimizer"]["state"], sb["optimizer"]["state"]
moments = lambda o: {(i, k) for i in o for k in o[i] if k != "step"}
keys = set(wa) == set(wb) and moments(oa) == moments(ob)
weights = max((wa[k].double() - wb[k].double()).abs().max().item() for k in wa) if keys else -1
optimizer = max((oa[i][k].double() - ob[i][k].double()).abs().max().item() for i, k in moments(oa)) if keys else -1
counters = lambda s: {"step": s["step"], "policy_version": s["policy_version"], "scheduler": s["scheduler"]["last_epoch"],
                      "adam_steps": sorted({int(v["step"]) for v in s["optimizer"]["state"].values()})}
print(json.dumps({"keys": keys, "weights": weights, "optimizer": optimizer, "counters": [counters(sa), counters(sb)]}))
`;
  const { stdout } = await execa(python(), ['-c', code, a, b], { env: { PYTHONPATH: join(projectRoot(), 'trainer') } });
  return JSON.parse(stdout) as CheckpointDiff;
}
