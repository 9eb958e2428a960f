// Hugging Face TRL's GRPOTrainer beside atk, for `npm run bench algorithms` (the shipped tiny model) and
// `npm run bench real` (SmolLM2): both train the same model on the same tasks in the same order (atk's prompt token
// ids checked against TRL's), with the same group size, learning rate, schedule, clip range, loss aggregation,
// temperature, token limit and scorer; one Python script then scores the base model and both trained models
// greedily on the same held-out tasks. TRL runs in a pinned venv of its own (bench/requirements-trl.txt, made on
// first use, ~4 GB), never in atk; without PyPI the comparison is skipped. Optionally atk runs a second time with
// its trainer on the venv's torch (ATK_PYTHON), so a gap that is only the torch build shows as one.
// Tasks (PeerTask): the quickstart's first turn (the calculator call; the reward of bench/lib/first-turn-call.ts,
// which trl_peer.py scores from the text) on the tiny model: TRL 1.16's tool calling parses calls with a response
// schema this model's template lacks, and without the calculator the model scores 0% (no learning signal), so the
// full 3-turn task is atk's alone. And one arithmetic answer in text, scored by its last number (atk's math_answer
// reward with no marked format): the task a pretrained chat model solves some of with no tool at all.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toChatTools } from '../../src/agent/chat-messages.js';
import { ArithOptions, generateArith } from '../../src/datasets/arith.js';
import { calculatorTool } from '../../src/tools/calculator.js';
import { ensureVenv } from '../../scripts/venv.mjs';

export interface PeerSettings {
  readonly root: string;
  readonly work: string;
  readonly steps: number;
  readonly tasksPerStep: number;
  readonly groupSize: number;
  readonly learningRate: number;
  readonly evalTasks: number;
  readonly seed: number;
}

/** What both trainers learn: the model, atk's recipe overrides for it, the tool list and the scorer. */
export interface PeerTask {
  /** The first line of the table: what was trained. */
  readonly label: string;
  readonly model: string;
  /** atk overrides of recipes/quickstart.yaml beyond the shared settings. */
  readonly atkOverrides: readonly string[];
  /** Whether the calculator is in the prompt's tool list. */
  readonly tools: boolean;
  /** trl_peer.py's scorer, atk's reward in Python. */
  readonly scorer: 'first_turn_call' | 'last_number';
  readonly maxNewTokens: number;
  /** torch threads of both trainers. */
  readonly threads: number;
  /** Run atk a second time with its trainer on the TRL venv's torch. */
  readonly atkOnVenvTorch: boolean;
}

/** The quickstart's model, task options and turn limit, first turn only: what both trainers get. */
export function quickstartFirstTurn(root: string): PeerTask {
  return {
    label: 'first turn of the quickstart task (the calculator call)',
    model: 'models/tiny-arith',
    atkOverrides: [
      'agent.max_turns=1',
      `reward={module: ${join(root, 'bench', 'lib', 'first-turn-call.ts')}, export: firstTurnCall}`,
    ],
    tools: true,
    scorer: 'first_turn_call',
    maxNewTokens: 32,
    threads: 1,
    atkOnVenvTorch: true,
  };
}

/** One arithmetic answer in text, no tools, scored by its last number, on `model` (a pretrained chat model). */
export function arithAnswer(model: string, threads: number, atkOverrides: readonly string[] = []): PeerTask {
  return {
    label: `one arithmetic answer in text, scored by its last number, ${model}`,
    model,
    atkOverrides: [
      `model.path=${model}`,
      'agent.max_turns=1',
      'tools=[]',
      'agent.tool_call_format=hermes', // no tools, but atk asks a format of every template
      'reward.options={formats: [], fallback_last_number: true}',
      `model.trainer.threads=${threads}`,
      ...atkOverrides,
    ],
    tools: false,
    scorer: 'last_number',
    maxNewTokens: 48,
    threads,
    atkOnVenvTorch: false,
  };
}

const TASK_OPTIONS = ArithOptions.parse({ max_digits: 3 });

/** The comparison's table and figures. */
export interface PeerResult {
  readonly report: string;
  readonly trlSamplesPerS: number;
  readonly atkSamplesPerS: number;
  readonly trlGain: number;
  readonly atkGain: number;
  readonly trlSeconds: number;
  readonly atkSeconds: number;
}

interface TrainedFigures {
  readonly seconds: number;
  readonly samples: number;
  readonly model: string;
}

/** The markdown table comparing TRL and atk on `task`, or the reason the comparison was skipped. */
export function trlPeer(settings: PeerSettings, task: PeerTask): PeerResult | string {
  const venv = ensureVenv({
    name: 'venv-trl',
    requirements: join(settings.root, 'bench', 'requirements-trl.txt'),
    note: 'about 4 GB the first time',
    offlineSkips: true,
  }) as { python: string } | { skipped: string };
  if ('skipped' in venv) return `TRL side by side skipped: ${venv.skipped}`;
  const dir = join(settings.work, 'trl-peer');
  mkdirSync(dir, { recursive: true });
  const python = (args: readonly string[]): Record<string, unknown> => {
    const result = spawnSync(venv.python, [join(settings.root, 'bench', 'lib', 'trl_peer.py'), ...args], {
      cwd: settings.root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      // Local models only, and no progress bars or deprecation notices between the bench's lines.
      env: {
        ...process.env,
        HF_HUB_OFFLINE: '1',
        HF_HUB_DISABLE_PROGRESS_BARS: '1',
        TRANSFORMERS_VERBOSITY: 'error',
        PYTHONWARNINGS: 'ignore::FutureWarning',
      },
    });
    if (result.status !== 0) throw new Error(`trl_peer.py ${args[0]} failed (exit ${result.status})`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  };
  const tools = join(dir, 'tools.json');
  writeFileSync(tools, JSON.stringify(task.tools ? toChatTools([calculatorTool().toolSpec]) : []));

  const atk = atkFirstTurn(settings, task, dir, 'atk');
  const trainFile = join(dir, 'train.jsonl');
  writeJsonl(trainFile, atk.trainOrder);
  const trlModel = join(dir, 'trl-model');
  const trl = python([
    'train',
    `--model=${task.model}`,
    `--tasks=${trainFile}`,
    `--tools=${tools}`,
    `--out=${trlModel}`,
    `--steps=${settings.steps}`,
    `--tasks-per-step=${settings.tasksPerStep}`,
    `--group-size=${settings.groupSize}`,
    `--lr=${settings.learningRate}`,
    `--max-new-tokens=${task.maxNewTokens}`,
    `--seed=${settings.seed}`,
    `--threads=${task.threads}`,
    `--scorer=${task.scorer}`,
  ]);

  const heldOut = join(dir, 'held-out.jsonl');
  writeJsonl(
    heldOut,
    generateArith('test', TASK_OPTIONS)
      .slice(0, settings.evalTasks)
      .map((task) => ({ prompt: task.prompt, answer: String(task.answer) })),
  );
  const score = (model: string): number =>
    Number(
      python([
        'eval',
        `--model=${model}`,
        `--tasks=${heldOut}`,
        `--tools=${tools}`,
        `--max-new-tokens=${task.maxNewTokens}`,
        `--threads=${task.threads}`,
        `--scorer=${task.scorer}`,
      ]).accuracy,
    );
  const base = score(task.model);
  const atkRuns = [{ name: 'atk grpo', run: atk }];
  if (task.atkOnVenvTorch) {
    // atk's trainer again on the venv's torch: atk's own Python here may have another torch than TRL's.
    const torch = spawnSync(venv.python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8' });
    atkRuns.push({
      name: `atk grpo, trainer on the venv's torch ${torch.stdout.trim()}`,
      run: atkFirstTurn(settings, task, dir, 'atk-venv-torch', venv.python),
    });
  }
  const trlFigures = { seconds: Number(trl.seconds), samples: Number(trl.samples), model: trlModel };
  const rows = [
    { name: `TRL ${String(trl.trl)} GRPOTrainer`, figures: trlFigures },
    ...atkRuns.map(({ name, run }) => ({ name, figures: run.figures })),
  ].map(({ name, figures }) => ({ name, figures, score: score(figures.model) }));
  const rate = (f: TrainedFigures): number => f.samples / f.seconds;
  const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
  const lines = [
    `${task.label}, ${settings.steps} steps x ${settings.tasksPerStep} tasks x ${settings.groupSize} samples, lr ${settings.learningRate} cosine, temperature 1, ${task.maxNewTokens} new tokens, ${task.threads} threads, seed ${settings.seed}; held-out: greedy first turn on ${settings.evalTasks} tasks, one scorer for all, base model ${pct(base)}`,
    '',
    '| trainer | held-out after (gain, points) | wall s (process) | samples | samples/s | samples/s / TRL |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      ({ name, figures, score: after }) =>
        `| ${name} | ${pct(after)} (${after >= base ? '+' : ''}${(100 * (after - base)).toFixed(1)}) | ${figures.seconds.toFixed(0)} | ${figures.samples} | ${rate(figures).toFixed(2)} | ${(rate(figures) / rate(trlFigures)).toFixed(2)}x |`,
    ),
    '',
    `reward check: the TRL-side scorer agrees with atk's reward on ${agreement(trl.reward_agreement)} of atk's training samples`,
    `training loop alone: TRL's trainer.train() ${Number(trl.train_seconds).toFixed(1)} s; ${atkRuns
      .map(
        ({ name, run }) =>
          `${name}: steps ${run.stepSeconds.toFixed(1)} s (generation ${run.generationSeconds.toFixed(1)} s, update ${run.trainSeconds.toFixed(1)} s)`,
      )
      .join('; ')}`,
  ];
  const [trlRow, atkRow] = [rows[0]!, rows[1]!];
  return {
    report: lines.join('\n'),
    trlSamplesPerS: rate(trlRow.figures),
    atkSamplesPerS: rate(atkRow.figures),
    trlGain: trlRow.score - base,
    atkGain: atkRow.score - base,
    trlSeconds: trlRow.figures.seconds,
    atkSeconds: atkRow.figures.seconds,
  };
}

/**
 * atk's run of `task` (recipes/quickstart.yaml with its overrides), exported as a model directory; with the tasks it
 * trained on, in its order, each with the prompt token ids it rendered.
 */
function atkFirstTurn(settings: PeerSettings, task: PeerTask, dir: string, name: string, trainerPython?: string) {
  const runsDir = join(dir, `${name}-runs`);
  const started = performance.now();
  const run = spawnSync(
    'node',
    [
      join(settings.root, 'bin', 'atk'),
      'run',
      'recipes/quickstart.yaml',
      `output.runs_dir=${runsDir}`,
      'name=first-turn',
      `seed=${settings.seed}`,
      `train.steps=${settings.steps}`,
      `train.tasks_per_step=${settings.tasksPerStep}`,
      `algorithm.group_size=${settings.groupSize}`,
      `algorithm.learning_rate=${settings.learningRate}`,
      `agent.max_new_tokens=${task.maxNewTokens}`,
      ...task.atkOverrides,
      'train.eval_before=false',
      'train.eval_after=false',
      '--no-tui',
    ],
    {
      cwd: settings.root,
      encoding: 'utf8',
      env: { ...process.env, ...(trainerPython && { ATK_PYTHON: trainerPython }) },
    },
  );
  const seconds = (performance.now() - started) / 1000;
  if (run.status !== 0) throw new Error(`atk first-turn run failed: ${run.stderr}`);
  const runDir = join(runsDir, 'first-turn', 'v001');
  const model = join(dir, `${name}-model`);
  const exported = spawnSync('node', [join(settings.root, 'bin', 'atk'), 'export', runDir, model], {
    cwd: settings.root,
    encoding: 'utf8',
  });
  if (exported.status !== 0) throw new Error(`atk export failed: ${exported.stderr}`);

  const answers = new Map(generateArith('train', TASK_OPTIONS).map((task) => [task.id, String(task.answer)]));
  const trainOrder: {
    prompt: string;
    answer: string;
    atk_prompt_ids: readonly number[];
    atk_samples: { completion_ids: readonly number[]; reward: number }[];
  }[] = [];
  const trajectories = join(runDir, 'trajectories');
  for (const file of readdirSync(trajectories).sort()) {
    const groups = new Map<number, AtkEpisode[]>();
    for (const line of readFileSync(join(trajectories, file), 'utf8').trim().split('\n')) {
      const episode = JSON.parse(line) as AtkEpisode;
      groups.set(episode.group, [...(groups.get(episode.group) ?? []), episode]);
    }
    for (const [, episodes] of [...groups].sort(([a], [b]) => a - b)) {
      const first = episodes[0]!;
      const answer = answers.get(first.task_id);
      if (answer === undefined) throw new Error(`task ${first.task_id} is not in the arith train split`);
      const [kind, promptTokens] = first.trajectory.segments[0]!;
      if (kind !== 'prompt') throw new Error(`${file}: the trajectory does not start with its prompt`);
      trainOrder.push({
        prompt: first.messages.find((m) => m.role === 'user')!.content[0]!.text!,
        answer,
        atk_prompt_ids: first.trajectory.ids.slice(0, promptTokens),
        atk_samples: episodes.map((e) => ({ completion_ids: e.trajectory.ids.slice(promptTokens), reward: e.reward })),
      });
    }
  }
  const steps = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number | string>)
    .filter((l) => l.kind === 'train');
  const sum = (key: string): number => steps.reduce((a, l) => a + Number(l[key] ?? 0), 0);
  return {
    figures: { seconds, samples: sum('episodes'), model } satisfies TrainedFigures,
    trainOrder,
    stepSeconds: sum('time_step_s'),
    generationSeconds: sum('time_generation_s'),
    trainSeconds: sum('time_train_s'),
  };
}

/** What the bench reads of a trajectory line (docs/runs.md). */
interface AtkEpisode {
  readonly group: number;
  readonly task_id: string;
  readonly reward: number;
  readonly messages: readonly { readonly role: string; readonly content: readonly { readonly text?: string }[] }[];
  readonly trajectory: { readonly ids: readonly number[]; readonly segments: readonly [string, number][] };
}

/** "k/n" from trl_peer.py's [agreeing, total]. */
function agreement(value: unknown): string {
  const [agree, total] = value as [number, number];
  return `${agree}/${total}`;
}

function writeJsonl(file: string, rows: readonly unknown[]): void {
  writeFileSync(file, rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
}
