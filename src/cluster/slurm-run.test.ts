import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { atkCliCommand, embeddedVllmCommand } from '../__fixtures__/engine-processes.js';
import { missingSlurmBinaries, startLocalSlurm, type LocalSlurm } from '../__fixtures__/local-slurm.js';
import { writeModelWithWeights } from '../__fixtures__/tiny-qwen2.js';
import { projectRoot } from '../util/paths.js';

// A node's /tmp, where an upload to it lands (the path is literal, not $TMPDIR); here the node is this machine.
const NODE_TMP = '/tmp';

// `atk run` inside a real allocation of the two-node local Slurm cluster: the CPU twin of
// recipes/gsm8k-grpo-slurm.yaml, with the trainer placed on n1 and one engine replica (the embedded
// engine behind a `vllm serve` command line) on n2, each an srun step.
const missing = missingSlurmBinaries();
if (missing.length)
  console.warn(
    `\n*** SKIPPING the Slurm cluster tests: ${missing.join(', ')} not installed (apt-get install slurm-wlm munge; .ci/run does) ***\n`,
  );

let slurm: LocalSlurm;

const STANDIN_ENGINE = [
  `  engine: {kind: vllm, command: ${JSON.stringify(embeddedVllmCommand)}, replicas: 1, startup_timeout_s: 120}`,
  '  trainer: {device: cpu, nodes: 1}',
  'algorithm: {name: sft, lora: {rank: 8, alpha: 16}}',
];

interface TwinOptions {
  /** The recipe's model.engine/trainer and algorithm lines. */
  readonly lines?: readonly string[];
  /** More keys of train, after its steps. */
  readonly train?: string;
  /** The shipped tiny-arith (a GRPO signal) rather than random weights of its architecture. */
  readonly shipped?: boolean;
  /** More keys of cluster, after its launcher. */
  readonly cluster?: string;
}

async function writeTwin(
  name: string,
  steps: number,
  { lines = STANDIN_ENGINE, train = '', shipped = false, cluster = '' }: TwinOptions = {},
): Promise<{ dir: string; recipe: string }> {
  const dir = mkdtempSync(join(tmpdir(), `atk-${name}-`));
  // The shipped tiny-arith model has a learning signal under GRPO; random weights of its architecture train by SFT.
  const tinyArith = join(projectRoot(), 'models', 'tiny-arith');
  const model = shipped ? tinyArith : await writeModelWithWeights(join(dir, 'model'), tinyArith);
  const recipe = join(dir, `${name}.yaml`);
  writeFileSync(
    recipe,
    [
      `name: ${name}`,
      `extends: ${join(projectRoot(), 'recipes', 'smoke', 'quickstart.yaml')}`,
      `cluster: {launcher: slurm${cluster}}`,
      'model:',
      `  path: ${model}`,
      ...lines,
      `train: {steps: ${steps}, eval_before: false, eval_after: false${train}}`,
    ].join('\n'),
  );
  return { dir, recipe };
}

/** `salloc -N2` running the atk CLI: atk reads the allocation from the environment salloc sets. */
function atkInAllocation(dir: string, recipe: string): ReturnType<typeof execa> {
  return atkCliInAllocation(dir, ['run', recipe, `output.runs_dir=${join(dir, 'runs')}`]);
}

function atkCliInAllocation(dir: string, atkArgs: readonly string[]): ReturnType<typeof execa> {
  const [file, ...args] = atkCliCommand();
  return execa('salloc', ['-N2', '--job-name=atk-test', '--', file!, ...args, ...atkArgs], {
    reject: false,
    cwd: dir,
    env: slurm.env,
  });
}

/** stderr but for npm's and salloc's own lines. */
function atkErrors(result: { stderr: unknown }): string {
  return String(result.stderr)
    .split('\n')
    .filter((l) => !/^(npm warn|salloc: )/.test(l))
    .join('\n');
}

/**
 * Polls `ready` every 250 ms until it holds, for at most 240 s. Throws as soon as `cli` ends first (its
 * errors are the failure), instead of waiting out the limit for a run that already failed.
 */
async function whileRunning(cli: ReturnType<typeof execa>, ready: () => boolean): Promise<void> {
  let ended = false;
  void cli.finally(() => void (ended = true));
  for (let waited = 0; waited < 240_000 && !ready(); waited += 250) {
    if (ended) throw new Error(`atk ended before the test could act on it:\n${atkErrors(await cli)}`);
    await sleep(250);
  }
}

/** Steps each slurmd launched (its log), by node. */
function stepsOn(node: string): string[] {
  return [...readFileSync(join(slurm.dir, `d-${node}.log`), 'utf8').matchAll(/launch task StepId=(\d+\.\d+)/g)].map(
    (m) => m[1]!,
  );
}

async function jobSteps(): Promise<string[]> {
  const result = await execa('squeue', ['-h', '-s', '-o', '%i %j %N'], { env: slurm.env, reject: false });
  return result.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.includes('extern'));
}

// One retry per test: under load, Debian's srun (Slurm 22.05) now and then fails to connect a step's
// I/O ("io_init_msg_read_from_fd: reading slurm_io_init_msg failed: Resource temporarily
// unavailable") and the step's process exits at once; seen once in the CI proof, on the engine step.
// A defect of atk fails both tries.
describe.skipIf(missing.length > 0)('atk run on a two-node Slurm allocation', { retry: 1 }, () => {
  const suiteStart = Date.now();
  beforeAll(async () => void (slurm = await startLocalSlurm()), 60_000);
  afterAll(async () => {
    await slurm?.stop();
    // The engine nodes' copies of the last synced adapter (node-local /tmp, here this machine's).
    for (const d of readdirSync(NODE_TMP)
      .filter((name) => /^atk-sync-\d+-r\d+$/.test(name))
      .map((name) => join(NODE_TMP, name))) {
      if (statSync(d).mtimeMs >= suiteStart) rmSync(d, { recursive: true, force: true });
    }
  }, 30_000);

  test('returns a finished run, submitted by atk launch slurm, with the trainer step on n1 and the engine step on n2, both cancelled at the end', async () => {
    const started = Date.now();
    // The slurmd logs hold the steps of earlier tests and of a failed first try: only this try's count.
    const before = { n1: stepsOn('n1').length, n2: stepsOn('n2').length };
    const { dir, recipe } = await writeTwin('slurm-twin', 2);
    const [file, ...args] = atkCliCommand();
    const launched = await execa(file!, [...args, 'launch', 'slurm', recipe, `output.runs_dir=${join(dir, 'runs')}`], {
      reject: false,
      cwd: dir,
      env: slurm.env,
    });
    const jobId = /submitted slurm job (\d+)/.exec(String(launched.stdout))?.[1];
    expect([launched.exitCode, jobId !== undefined]).toStrictEqual([0, true]);
    const script = readFileSync(/: (\S+\.sbatch)/.exec(String(launched.stdout))![1]!, 'utf8');
    expect(script).toContain('#SBATCH --nodes=2\n');
    for (
      let waited = 0;
      waited < 240_000 &&
      (await execa('squeue', ['-h', '-j', jobId!], { env: slurm.env, reject: false })).stdout.trim();
      waited += 1000
    )
      await sleep(1000);
    const job = (await execa('scontrol', ['show', 'job', '-o', jobId!], { env: slurm.env, reject: false })).stdout;
    const out = readFileSync(join(dir, 'runs', 'slurm-twin', 'slurm', `slurm-${jobId}.out`), 'utf8');
    expect([/JobState=(\w+)/.exec(job)?.[1], /ExitCode=(\S+)/.exec(job)?.[1]], out).toStrictEqual(['COMPLETED', '0:0']);
    const run = join(dir, 'runs', 'slurm-twin', 'v001');
    const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { policy_version: number; time_sync_s: number });
    expect(steps.map((s) => [s.policy_version, s.time_sync_s > 0])).toStrictEqual([
      [1, true],
      [2, true],
    ]);
    const manifest = JSON.parse(readFileSync(join(run, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    expect(JSON.stringify(manifest)).toContain('"trainer_nodes":["n1"],"engine_nodes":["n2"]');
    expect(readFileSync(join(run, 'logs', 'engine.log'), 'utf8')).toContain('"SLURMD_NODENAME": "n2"');
    // What each slurmd launched: one step on n1 (the trainer); on n2 the engine and one upload per sync.
    const [onN1, onN2] = [stepsOn('n1').slice(before.n1), stepsOn('n2').slice(before.n2)];
    expect([onN1.length, onN2.length, onN2.includes(onN1[0]!)]).toStrictEqual([1, 3, false]);
    // No shared directory: each step's adapter went to n2 through an srun step, the previous copy removed.
    const copies = readdirSync(NODE_TMP)
      .filter((d) => /^atk-sync-\d+-r0$/.test(d))
      .map((d) => join(NODE_TMP, d))
      .filter((d) => statSync(d).mtimeMs >= started);
    expect(copies.map((d) => readdirSync(d))).toStrictEqual([['step-00002']]);
    expect(readdirSync(join(copies[0]!, 'step-00002')).sort()).toStrictEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
    ]);
    rmSync(copies[0]!, { recursive: true });
    expect(await jobSteps()).toStrictEqual([]);
  }, 300_000);

  test('returns a finished run whose trainer spans n1 and n2 in one srun step, one torchrun per node, rank 0 serving on n1', async () => {
    const before = { n1: stepsOn('n1').length, n2: stepsOn('n2').length };
    const { dir, recipe } = await writeTwin('slurm-2node', 2, {
      lines: ['  engine: {kind: embedded}', '  trainer: {device: cpu, nodes: 2}', 'algorithm: {name: sft}'],
    });
    const result = await atkInAllocation(dir, recipe);
    expect([result.exitCode, atkErrors(result)]).toStrictEqual([0, '']);
    const run = join(dir, 'runs', 'slurm-2node', 'v001');
    const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { policy_version: number });
    expect(steps.map((s) => s.policy_version)).toStrictEqual([1, 2]);
    expect(readFileSync(join(run, 'manifest.json'), 'utf8').replace(/\s/g, '')).toContain(
      '"trainer_nodes":["n1","n2"]',
    );
    const onN2 = stepsOn('n2').slice(before.n2);
    expect(
      stepsOn('n1')
        .slice(before.n1)
        .filter((id) => onN2.includes(id)),
    ).toHaveLength(1);
    expect(await jobSteps()).toStrictEqual([]);
  }, 300_000);

  test('returns a full-weight run broadcast to n2 without a shared directory that, its job cancelled mid-run, resumes in a new allocation with every step once', async () => {
    const { dir, recipe } = await writeTwin('slurm-broadcast', 4, {
      lines: [
        `  engine: {kind: vllm, command: ${JSON.stringify(embeddedVllmCommand)}, replicas: 1, startup_timeout_s: 120}`,
        '  trainer: {device: cpu, nodes: 1}',
      ],
      train: ', save_every: 1',
      shipped: true,
    });
    const before = { n1: stepsOn('n1').length, n2: stepsOn('n2').length };
    const run = join(dir, 'runs', 'slurm-broadcast', 'v001');
    const metrics = join(run, 'metrics.jsonl');
    const first = atkInAllocation(dir, recipe);
    await whileRunning(first, () => existsSync(join(run, 'checkpoints', 'step-00001', 'model.safetensors')));
    const jobId = (await jobSteps()).find((l) => /atk-\d+-engine-0/.test(l))?.split('.')[0];
    expect(jobId).toMatch(/^\d+$/);
    await execa('scancel', [jobId!], { env: slurm.env }); // the whole allocation goes, as when its time ends
    const killed = await first;
    const linesAtKill = readFileSync(metrics, 'utf8').trim().split('\n').length;
    expect([killed.exitCode !== 0, linesAtKill < 4]).toStrictEqual([true, true]);
    expect(await jobSteps()).toStrictEqual([]);

    const resumed = await atkCliInAllocation(dir, ['run', '--resume', run]);
    expect([resumed.exitCode, atkErrors(resumed)]).toStrictEqual([0, '']);
    const lines = readFileSync(metrics, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number | string>);
    // One resume, from a checkpoint the first allocation committed (step 1 at least, before the last step).
    const resumes = lines.filter((l) => l.kind === 'resume').map((l) => Number(l.step));
    expect([resumes.length, resumes[0]! >= 1 && resumes[0]! < 4]).toStrictEqual([1, true]);
    const steps = lines.filter((l) => l.kind === 'train') as Record<string, number>[];
    // Each step once, in order, across both allocations; every sync went by broadcast and took (the trainer's
    // logprobs agree with the engine's), the resumed run's first one included.
    expect(
      steps.map((s) => [s.step, s.policy_version, s['sync/tensors']! > 0, s['train/mismatch_max']! < 1e-4]),
    ).toStrictEqual([
      [1, 1, true, true],
      [2, 2, true, true],
      [3, 3, true, true],
      [4, 4, true, true],
    ]);
    const manifest = readFileSync(join(run, 'manifest.json'), 'utf8');
    expect(manifest).toContain('"weight_sync": "full (broadcast)"');
    // n2 ran the engine once per allocation and nothing else: no upload step, no sync directory anywhere.
    expect([stepsOn('n1').length - before.n1, stepsOn('n2').length - before.n2]).toStrictEqual([2, 2]);
    expect(existsSync(join(run, 'checkpoints', 'sync'))).toBe(false);
    expect(await jobSteps()).toStrictEqual([]);
  }, 300_000);

  test('rejects a run whose engine process stops answering mid-run, after three unanswered heartbeats, naming the replica and its node', async () => {
    // Heartbeats 2 s apart rather than the default 10: the three misses take a third of the time to add up.
    const { dir, recipe } = await writeTwin('slurm-hung', 40, { cluster: ', heartbeat_interval_s: 2' });
    const cli = atkInAllocation(dir, recipe);
    const run = join(dir, 'runs', 'slurm-hung', 'v001');
    const metrics = join(run, 'metrics.jsonl');
    await whileRunning(cli, () => existsSync(metrics) && readFileSync(metrics, 'utf8').trim() !== '');
    // SIGSTOP: the engine's process neither ends nor refuses connections, as on a hung node.
    const enginePid = Number(
      /embedded-vllm-serve: pid (\d+)/.exec(readFileSync(join(run, 'logs', 'engine.log'), 'utf8'))?.[1],
    );
    process.kill(enginePid, 'SIGSTOP');
    const stoppedAt = Date.now();
    const result = await cli;
    const seconds = (Date.now() - stoppedAt) / 1000;
    expect(result.exitCode).not.toBe(0);
    expect(String(result.stderr)).toMatch(
      /engine replica 0 on node n2 \(slurm job \d+\) answered none of 3 heartbeats \(GET \/health, 2 s apart\) during the run/,
    );
    // 3 heartbeats 2 s apart, each given 5 s, then the steps' cancellation: well under the 120 s request timeout.
    expect(seconds).toBeLessThan(60);
    expect(await jobSteps()).toStrictEqual([]);
  }, 300_000);

  test('rejects a run whose engine step is cancelled mid-run, naming the engine replica and its node, with every step gone', async () => {
    const { dir, recipe } = await writeTwin('slurm-lost', 40);
    const cli = atkInAllocation(dir, recipe);
    const metrics = join(dir, 'runs', 'slurm-lost', 'v001', 'metrics.jsonl');
    await whileRunning(cli, () => existsSync(metrics) && readFileSync(metrics, 'utf8').trim() !== '');
    const engineStep = (await jobSteps()).find((l) => /atk-\d+-engine-0/.test(l))?.split(' ')[0];
    expect(engineStep).toMatch(/^\d+\.\d+$/);
    await execa('scancel', [engineStep!], { env: slurm.env });
    const result = await cli;
    expect(result.exitCode).not.toBe(0);
    expect(String(result.stderr)).toMatch(
      /engine replica 0 on node n2 \(slurm job \d+\) (was killed|exited with code \d+) during the run \(log: logs\/engine\.log\)/,
    );
    expect(readFileSync(metrics, 'utf8').trim().split('\n').length).toBeLessThan(40);
    expect(await jobSteps()).toStrictEqual([]);
  }, 300_000);
});
