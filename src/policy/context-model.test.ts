import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble, type ReplyScript } from '../__fixtures__/engine-double.js';
import { TINY_ARITH_DIR } from '../__fixtures__/embedded-engine.js';
import { firstSampleRequest } from '../__fixtures__/episode-request.js';
import { doubleExchanges, recordingEngine, type EngineExchange } from '../__fixtures__/tito-invariants.js';
import { SUMMARY_HEADER } from '../agent/long-episode.js';
import { datasets } from '../datasets/index.js';
import type { Engine } from '../engines/types.js';
import { createVllmClient } from '../engines/vllm.js';
import { ConfigError } from '../errors/index.js';
import { loadRecipe, resolvedYaml, type ResolvedRecipe } from '../recipe/index.js';
import type { Rollout, EpisodeKit } from '../rollout/collect.js';
import { collectRollout } from '../rollout/collect.js';
import { buildEpisodeKit } from '../run/kit.js';
import { asGroupMember } from '../run/step-phases.js';
import { segmentFigures } from '../run/step-record.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import { projectRoot } from '../util/paths.js';
import { startContextModel } from './context-model.js';

// agent.context.model end to end below the CLI: the recipe names the shipped tiny-helpdesk as a fixed
// summariser, started on the real embedded engine (a second trainer process on CPU) by the policy layer,
// while a scripted engine double plays a tiny-arith policy (the two tokenizers differ: the summariser
// renders and decodes with its own). The policy's calculator calls pass the context budget, so the
// episode is rewritten with the fixed model's summary, which must reach the policy as environment text
// only: no token of it is trained, no policy turn is spent on it, and the new segment says why.
const TINY_HELPDESK_DIR = join(projectRoot(), 'models', 'tiny-helpdesk');
const call = (expression: string): string =>
  `<tool_call>\n{"name": "calculator", "arguments": {"expression": "${expression}"}}\n</tool_call><|im_end|>`;
const POLICY_TURNS = [call('12+7'), call('19*2'), call('38-5'), call('33+1'), 'Answer: 34<|im_end|>'];
const task = { id: 't1', prompt: 'What is 12+7, doubled, less 5, plus 1?', answer: '34', data: {} };

/** A recipe file `r.yaml` in `dir` with `agent.context` set to `context`, and `extra` top-level keys. */
function recipeText(dir: string, context: string, extra = ''): string {
  const text = `name: ctx
model:
  path: ${TINY_ARITH_DIR}
dataset:
  name: arith
tools:
  - name: calculator
reward:
  name: math_answer
agent:
  max_turns: 8
  max_new_tokens: 48
  context:
${context}
${extra}`;
  writeFileSync(join(dir, 'r.yaml'), text);
  return join(dir, 'r.yaml');
}

let dir: string;
let tokenizer: ModelTokenizer;
/** The summariser's own tokenizer. */
let helpdesk: ModelTokenizer;
let recipe: ResolvedRecipe;
let double: EngineDouble;
let kit: EpisodeKit;
/** What the summariser's engine was asked and answered, in order. */
let summaries: EngineExchange[];
/** The summariser's engine itself. */
let fixedEngine: Engine;
let rollout: Rollout;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'atk-context-model-'));
  // Relative to the recipe's directory: agent.context.model resolves against the recipe, as model.path does.
  const file = recipeText(
    dir,
    [
      '    strategy: summarize',
      '    budget_tokens: 150',
      '    keep_last_turns: 1',
      '    max_summary_tokens: 48',
      `    model: ${relative(dir, TINY_HELPDESK_DIR)}`,
    ].join('\n'),
  );
  recipe = (await loadRecipe(file)).recipe;
  tokenizer = await loadModelTokenizer(TINY_ARITH_DIR);
  helpdesk = await loadModelTokenizer(TINY_HELPDESK_DIR);
  const script: ReplyScript = () => ({
    tokenIds: tokenizer.encode(POLICY_TURNS[Math.min(double.requests.length - 1, POLICY_TURNS.length - 1)]!),
  });
  double = await startEngineDouble({ script });
  kit = await buildEpisodeKit({
    recipe,
    recipeDir: dir,
    recipeFile: file,
    runDir: dir,
    dataset: await datasets.get('arith'),
    engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
    tokenizer,
    startContextModel: async () => {
      const started = await startContextModel({ recipe, recipeDir: dir, logsDir: join(dir, 'logs'), runDir: dir });
      if (!started) return undefined;
      fixedEngine = started.summarizer.engine;
      const recorded = recordingEngine(fixedEngine);
      summaries = recorded.exchanges;
      return { ...started, summarizer: { ...started.summarizer, engine: recorded.engine } };
    },
    warn: () => undefined,
  });
  rollout = await collectRollout(kit, firstSampleRequest(task));
}, 120_000);

afterAll(async () => {
  await kit?.close?.();
  await double?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function segmentsOf(r: Rollout): TokenTrajectory[] {
  return [...(r.episode.priorSegments ?? []).map((s) => s.trajectory), r.episode.trajectory];
}

describe('startContextModel', () => {
  test('returns the summariser resolved.yaml names: the model resolved against the recipe, on the embedded engine by default', () => {
    expect([recipe.agent.context.model, recipe.agent.context.engine?.kind]).toStrictEqual([
      TINY_HELPDESK_DIR,
      'embedded',
    ]);
    expect(resolvedYaml(recipe)).toContain(`    model: ${TINY_HELPDESK_DIR}\n    engine:\n      kind: embedded\n`);
  });

  test("returns episodes that carry the fixed model's greedy summaries as environment text, in segments whose reason says so", () => {
    const { episode } = rollout;
    expect(episode.error).toBeUndefined();
    expect(episode.finishReason).toBe('endTurn');
    // One rewrite per summary the fixed model was asked for, each named summarized_fixed.
    const rewrites = summaries.length;
    expect(rewrites).toBeGreaterThan(0);
    expect(episode.priorSegments?.map((s) => s.endedBecause)).toStrictEqual(Array(rewrites).fill('summarized_fixed'));
    // Asked in its own tokens, with the dropped calls and the summary prompt.
    const summaryPrompt = recipe.agent.context.summary_prompt;
    const asked = helpdesk.decode(summaries[0]!.promptIds);
    expect(asked).toContain('"expression": "12+7"');
    expect(asked).toContain(`<|im_start|>user\n${summaryPrompt}<|im_end|>\n<|im_start|>assistant\n`);
    // The policy's engine never saw the summary prompt: no policy turn wrote a summary or was spent on one.
    for (const request of double.requests) expect(tokenizer.decode(request.promptIds)).not.toContain(summaryPrompt);
    expect(double.requests).toHaveLength(POLICY_TURNS.length);
    expect(episode.stats.turns).toBe(POLICY_TURNS.length);
    // Each new segment's prompt, environment tokens only (mask 0), holds the summary the fixed model wrote.
    for (const [k, after] of segmentsOf(rollout).slice(1).entries()) {
      const summary = helpdesk.decode(summaries[k]!.tokenIds, { skipSpecial: true }).trim();
      expect(summary.length).toBeGreaterThan(0);
      const prompt = tokenizer.decode(after.ids.slice(0, after.promptLength));
      expect(prompt).toContain(`<|im_start|>user\n${SUMMARY_HEADER}\n${summary}<|im_end|>`);
      expect(prompt).not.toContain('"expression": "12+7"');
      expect(after.segments[0]).toMatchObject({ source: 'prompt', start: 0, length: after.promptLength });
      expect(after.mask().slice(0, after.promptLength)).toStrictEqual(Array(after.promptLength).fill(0));
    }
  });

  test("returns trajectories whose trained tokens are the policy's answers only, as the run's batch takes them", () => {
    const policyAnswers = doubleExchanges(double).flatMap((x) => x.tokenIds);
    const trained = segmentsOf(rollout).flatMap((t) => {
      const mask = t.mask();
      return t.ids.filter((_, i) => mask[i] === 1);
    });
    expect(trained).toStrictEqual(policyAnswers);
    // What the run hands the trainer: loss-mask-1 tokens over every segment are the policy's, none the summariser's.
    const member = asGroupMember(rollout, 'zero');
    const masked = [...(member.priorTokens ?? []), member.tokens].flatMap((s) =>
      s.token_ids.filter((_, i) => s.loss_mask[i] === 1),
    );
    expect(masked).toStrictEqual(policyAnswers);
    expect(rollout.episode.stats.generatedTokens).toBe(policyAnswers.length);
    expect(segmentFigures([rollout])).toStrictEqual({
      'segments/per_episode': summaries.length + 1,
      'segments/rewrites/summarized_fixed': summaries.length,
      'segments/context_dropped_tokens': rollout.episode.stats.contextDroppedTokens,
    });
  });

  test('returns the same summary when asked again: it is the greedy answer of the fixed model', async () => {
    const again = await fixedEngine.generate(summaries[0]!.promptIds, {
      maxTokens: 48,
      temperature: 0,
      topP: 1,
      topK: -1,
      stopTokenIds: helpdesk.eosTokenIds,
    });
    expect(again.tokenIds).toStrictEqual(summaries[0]!.tokenIds);
  });
});

describe('contextModelProblems', () => {
  /** The error lines loading `r.yaml` gives, the recipe holding `context` (and `extra`). */
  async function problems(context: readonly string[], extra = ''): Promise<string[]> {
    const file = recipeText(dir, context.map((line) => `    ${line}`).join('\n'), extra);
    const error = await loadRecipe(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message.split('\n');
  }
  const file = (): string => join(dir, 'r.yaml');

  test('rejects a fixed model without strategy summarize, at agent.context.model', async () => {
    expect(await problems(['strategy: sliding_window', `model: ${TINY_HELPDESK_DIR}`])).toStrictEqual([
      `${file()}:15:12  agent.context.model: only agent.context.strategy summarize asks a model for a summary (this recipe's strategy is sliding_window)`,
    ]);
  });

  test('rejects an engine for the policy as summariser, at agent.context.engine', async () => {
    expect(await problems(['strategy: summarize', 'engine: {kind: vllm}'])).toStrictEqual([
      `${file()}:15:13  agent.context.engine: serves agent.context.model, which is the policy here: name the fixed model (agent.context.model: <path>) or remove it`,
    ]);
  });

  test('rejects a url engine without its url, and an embedded one without a local model', async () => {
    expect(await problems(['strategy: summarize', `model: ${TINY_HELPDESK_DIR}`, 'engine: {kind: url}'])).toStrictEqual(
      [`${file()}:16:20  agent.context.engine.kind: kind url needs agent.context.engine.url`],
    );
    expect(await problems(['strategy: summarize', 'model: no-such-model'])).toStrictEqual([
      `${file()}:15:12  agent.context.model: no config.json in ${join(dir, 'no-such-model')}: the embedded engine loads a local Hugging Face directory (serve a hub model with agent.context.engine.kind vllm, sglang or url)`,
    ]);
  });

  test('rejects rollout workers that would each start their own summariser, at rollout.workers', async () => {
    expect(
      await problems(['strategy: summarize', `model: ${TINY_HELPDESK_DIR}`], 'rollout:\n  workers: 2\n'),
    ).toStrictEqual([
      `${file()}:17:12  rollout.workers: each rollout worker would start its own embedded engine for agent.context.model; attach one by URL (agent.context.engine.kind: url) or set rollout.workers: 0`,
    ]);
  });

  test('returns model policy, written or not, as the policy summarising with no engine', async () => {
    for (const context of [['strategy: summarize'], ['strategy: summarize', 'model: policy']]) {
      const { recipe: loaded } = await loadRecipe(recipeText(dir, context.map((l) => `    ${l}`).join('\n')));
      expect([loaded.agent.context.model, loaded.agent.context.engine]).toStrictEqual(['policy', undefined]);
    }
  });
});
