// A real run directory for the viewers' tests (inspect-trajectory, report, runs compare): episodes run
// for real through the agent loop, the calculator tool and the math_answer reward against a scripted
// engine double, recorded with the run loop's own writers (createRunDir, trajectoryRecord, evaluate).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Task } from '../datasets/types.js';
import { datasets } from '../datasets/index.js';
import { createVllmClient } from '../engines/vllm.js';
import { loadRecipe, resolvedYaml } from '../recipe/index.js';
import { collectRollout, type EpisodeKit } from '../rollout/collect.js';
import { evaluate } from '../run/evaluate.js';
import type { EvalSummary } from '../run/events.js';
import { buildEpisodeKit } from '../run/kit.js';
import { trajectoryRecord } from '../run/step-record.js';
import { createRunDir } from '../runs/index.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/index.js';
import { startEngineDouble, type EngineDouble, type ScriptedReply } from './engine-double.js';
import { TINY_TOKENIZER_DIR } from './tokenizers.js';

/** Problems the scripted model sees; its answers are right except where `wrong` says otherwise. */
export const RECORDED_TASKS: readonly Task[] = [
  { id: 'add-1', prompt: 'What is 2+3?', answer: '5', data: { expression: '2+3' } },
  { id: 'mul-1', prompt: 'What is 7*8?', answer: '56', data: { expression: '7*8' } },
  { id: 'sub-1', prompt: 'What is 9-4?', answer: '5', data: { expression: '9-4' } },
  { id: 'bad-tool', prompt: 'What is 6/2?', answer: '3', data: { expression: '6/2' } },
];

/** Logprob the scripted model gives the answer's digits (p ~ 0.05): the token view must highlight them. */
export const LOW_LOGPROB = -3;

export interface RecordedRunOptions {
  /** Training steps with trajectory files (episodes run for real). */
  readonly trajectorySteps?: number;
  /** Training steps with metrics lines (synthetic, shaped like a learning curve). */
  readonly metricSteps?: number;
  /** Added to every reward figure of the synthetic metrics, to tell runs apart. */
  readonly rewardShift?: number;
  readonly name?: string;
}

/**
 * Create `<root>/runs/<name>/v001` as `atk run` would, with trajectories, metrics, two evals
 * (before and after) and a finished status. Returns the run directory.
 */
export async function recordRun(root: string, options: RecordedRunOptions = {}): Promise<string> {
  const name = options.name ?? 'fixture';
  const recipeFile = await writeFixtureRecipe(root, name);
  const loaded = await loadRecipe(recipeFile);
  const run = await createRunDir({
    runsDir: join(root, 'runs'),
    name,
    recipeText: recipeYaml(name),
    resolvedYaml: resolvedYaml(loaded.recipe),
    seed: 0,
    recipeFile,
  });
  const { kit, double } = await scriptedKit(recipeFile, run.dir);
  try {
    const evalOptions = { split: 'test', samples: 2, temperature: 0, topP: 1, topK: -1, concurrency: 4, seed: 0 };
    const before = await evaluate(kit, RECORDED_TASKS, {
      ...evalOptions,
      label: 'step-00000',
      step: 0,
      policyVersion: 0,
      outDir: join(run.evalDir, 'step-00000'),
    });
    for (let step = 0; step < (options.trajectorySteps ?? 2); step++) {
      const records = [];
      for (const [group, task] of RECORDED_TASKS.entries()) {
        for (let sample = 0; sample < 2; sample++) {
          const rollout = await collectRollout(kit, {
            task,
            group,
            sample,
            seed: step * 100 + group * 10 + sample,
            temperature: 1,
            topP: 1,
            topK: -1,
            policyVersion: step,
          });
          records.push(trajectoryRecord(rollout, step, rollout.success ? 0.5 : -0.5));
        }
      }
      await run.writeTrajectories(step, records);
    }
    const steps = options.metricSteps ?? 40;
    for (let step = 1; step <= steps; step++) await run.appendMetrics(syntheticStep(step, options.rewardShift ?? 0));
    await run.appendMetrics({ kind: 'eval', step: 0, ...before });
    const after: EvalSummary = {
      ...before,
      label: `step-${String(steps).padStart(5, '0')}`,
      accuracy: Math.min(1, before.accuracy + 0.25 + (options.rewardShift ?? 0)),
      reward_mean: before.reward_mean + 0.25,
    };
    await mkdir(join(run.evalDir, after.label), { recursive: true });
    await writeFile(join(run.evalDir, after.label, 'summary.json'), JSON.stringify(after));
    await run.appendMetrics({ kind: 'eval', step: steps, ...after });
    await run.setStatus('finished');
    return run.dir;
  } finally {
    await kit.close?.();
    await double.close();
  }
}

/** The episode kit of a fixture recipe (written by `recordRun` or `writeFixtureRecipe`) over the scripted engine double. */
export async function scriptedKit(
  recipeFile: string,
  runDir?: string,
): Promise<{ kit: EpisodeKit; double: EngineDouble }> {
  const loaded = await loadRecipe(recipeFile);
  const tokenizer = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  const double = await startEngineDouble({ script: (request) => scriptedModel(tokenizer, request.promptIds) });
  const engine = createVllmClient({ baseUrl: double.url, model: 'policy' });
  const kit = await buildEpisodeKit({
    recipe: loaded.recipe,
    recipeDir: loaded.dir,
    recipeFile,
    ...(runDir ? { runDir } : {}),
    dataset: await datasets.get('arith'),
    engine,
    tokenizer,
    warn: () => undefined,
  });
  return { kit, double };
}

/** Write the fixture recipe `<dir>/<name>.yaml` and return its path. */
export async function writeFixtureRecipe(dir: string, name = 'fixture'): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, recipeYaml(name));
  return file;
}

function recipeYaml(name: string): string {
  return [
    `name: ${name}`,
    'seed: 0',
    'model:',
    `  path: ${TINY_TOKENIZER_DIR}`,
    '  engine:',
    '    kind: url',
    '    url: http://127.0.0.1:1',
    'dataset:',
    '  name: arith',
    'tools:',
    '  - name: calculator',
    'reward:',
    '  name: math_answer',
    '  options:',
    '    formats: [answer]',
    '    fallback_last_number: false',
    'agent:',
    '  system_prompt: Use the calculator, then write Answer and the number.',
    '  max_turns: 3',
    '  max_new_tokens: 256',
    'train:',
    '  steps: 40',
    '',
  ].join('\n');
}

/**
 * The scripted policy: first turn calls the calculator on the problem (the `bad-tool` problem calls
 * a tool that does not exist), then answers from the tool result, except 7*8 which it gets wrong.
 */
export function scriptedModel(tokenizer: ModelTokenizer, promptIds: readonly number[]): ScriptedReply {
  const prompt = tokenizer.decode(promptIds);
  const question = [...prompt.matchAll(/What is ([^?]+)\?/g)].at(-1)?.[1] ?? '1+1';
  const afterQuestion = prompt.slice(prompt.lastIndexOf('What is'));
  if (!afterQuestion.includes('<tool_response>')) {
    const tool = question === '6/2' ? 'abacus' : 'calculator';
    return reply(
      tokenizer,
      `Let me compute.\n<tool_call>\n{"name": "${tool}", "arguments": {"expression": "${question}"}}\n</tool_call><|im_end|>`,
    );
  }
  const result = /<tool_response>\n([^\n]*)\n<\/tool_response>/.exec(afterQuestion)?.[1] ?? '';
  const answer = question === '7*8' ? '54' : /^-?\d+$/.test(result.trim()) ? result.trim() : '0';
  const head = tokenizer.encode('Answer: ');
  const digits = tokenizer.encode(answer);
  const tail = tokenizer.encode('<|im_end|>');
  return {
    tokenIds: [...head, ...digits, ...tail],
    logprobs: [...head.map(() => -0.05), ...digits.map(() => LOW_LOGPROB), ...tail.map(() => -0.01)],
  };
}

function reply(tokenizer: ModelTokenizer, text: string): ScriptedReply {
  return { tokenIds: tokenizer.encode(text) };
}

/** A deterministic learning curve: reward and accuracy rise, entropy falls, KL and mismatch stay small. */
function syntheticStep(step: number, shift: number): Record<string, number | string> {
  const progress = 1 - Math.exp(-step / 12);
  const wiggle = 0.03 * Math.sin(step * 1.7);
  return {
    kind: 'train',
    step,
    policy_version: step,
    reward_mean: 0.2 + 0.6 * progress + wiggle + shift,
    accuracy: Math.min(1, 0.15 + 0.65 * progress + wiggle + shift),
    episodes: 32,
    failed_episodes: step % 11 === 3 ? 1 : 0,
    groups: 8,
    dropped_groups: step % 4,
    trained_sequences: 32 - 4 * (step % 4),
    tool_calls_per_episode: 1 + 0.5 * progress,
    tool_error_rate: 0.2 * (1 - progress),
    mean_turns: 2 + progress,
    response_tokens_mean: 40 - 10 * progress + 5 * wiggle,
    generated_tokens: 1200,
    generation_tokens_per_s: 900 + 10 * step,
    time_step_s: 1.5,
    staleness_mean: step % 2 ? 0.5 : 1,
    staleness_max: 1,
    stale_groups_dropped: step === 5 ? 1 : 0,
    engine_busy_share: 0.9,
    trainer_busy_share: 0.7,
    'train/entropy': 1.2 - 0.7 * progress,
    'train/kl': 0.002 * step,
    // The size real runs record (bf16 engine vs fp32 trainer on the same weights): charts must label it.
    'train/mismatch_mean': 1e-7 * (1 + 0.2 * Math.cos(step)),
    'train/loss': 0.1 * Math.cos(step / 3),
  };
}
