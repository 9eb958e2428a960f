// atk view's token answer for an episode split in segments: a run directory written with the run loop's
// own writers (createRunDir, collectRollout, trajectoryRecord) from a recipe whose sliding window drops
// turns, served by the real view server.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { datasets } from '../datasets/index.js';
import { createVllmClient } from '../engines/vllm.js';
import { loadRecipe, resolvedYaml } from '../recipe/index.js';
import { collectRollout, type Rollout } from '../rollout/collect.js';
import { buildEpisodeKit } from '../run/kit.js';
import { trajectoryRecord } from '../run/step-record.js';
import { createRunDir } from '../runs/index.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/index.js';
import type { EpisodeTokens } from './api-types.js';
import { startViewServer, type ViewServer } from './server.js';

// Three calculator calls, then the answer; a window that keeps one turn past the task splits the episode.
const RECIPE = [
  'name: segmented',
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
  'agent:',
  '  system_prompt: Use the calculator, then write Answer and the number.',
  '  max_turns: 5',
  '  max_new_tokens: 64',
  '  context:',
  '    strategy: sliding_window',
  '    budget_tokens: 560',
  '    keep_last_turns: 1',
  'train:',
  '  steps: 1',
  '',
].join('\n');
const REPLIES = [
  ...['2+3', '5*1', '5-0'].map(
    (e) => `<tool_call>\n{"name": "calculator", "arguments": {"expression": "${e}"}}\n</tool_call><|im_end|>`,
  ),
  'Answer: 5<|im_end|>',
];

let root: string;
let server: ViewServer;
let rollout: Rollout;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-view-segments-'));
  const recipeFile = join(root, 'segmented.yaml');
  await writeFile(recipeFile, RECIPE);
  const loaded = await loadRecipe(recipeFile);
  const run = await createRunDir({
    runsDir: join(root, 'runs'),
    name: 'segmented',
    recipeText: RECIPE,
    resolvedYaml: resolvedYaml(loaded.recipe),
    seed: 0,
    recipeFile,
  });
  const tokenizer: ModelTokenizer = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  const double: EngineDouble = await startEngineDouble({
    script: () => ({ tokenIds: tokenizer.encode(REPLIES[Math.min(double.requests.length, REPLIES.length) - 1]!) }),
  });
  const kit = await buildEpisodeKit({
    recipe: loaded.recipe,
    recipeDir: loaded.dir,
    recipeFile,
    runDir: run.dir,
    dataset: await datasets.get('arith'),
    engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
    tokenizer,
    warn: () => undefined,
  });
  try {
    const task = { id: 'add-1', prompt: 'What is 2+3?', answer: '5', data: { expression: '2+3' } };
    rollout = await collectRollout(kit, {
      task,
      group: 0,
      sample: 0,
      seed: 0,
      temperature: 1,
      topP: 1,
      topK: -1,
      policyVersion: 0,
    });
    await run.writeTrajectories(0, [trajectoryRecord(rollout, 0, 0.5)]);
    await run.setStatus('finished');
  } finally {
    await kit.close?.();
    await double.close();
  }
  server = await startViewServer({ paths: [join(root, 'runs')], pollMs: 200 });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

describe('startViewServer /api/tokens', () => {
  test('returns every segment of a split episode in order, with its reason, its tokens and its own drift audit', async () => {
    expect(rollout.error).toBeUndefined();
    // The episode as the agent produced it, before the writer dropped each segment's shared prefix.
    const episode = rollout.episode;
    const expected = [
      ...(episode.priorSegments ?? []).map((s) => ({ ids: s.trajectory.ids, endedBecause: s.endedBecause })),
      { ids: episode.trajectory.ids, endedBecause: null },
    ];
    expect(expected.length).toBeGreaterThan(2);
    expect(expected.map((s) => s.endedBecause)).toStrictEqual([...expected.slice(1).map(() => 'sliding_window'), null]);

    const res = await fetch(new URL('/api/tokens?run=segmented/v001&source=step-00000&index=0', server.url));
    expect(res.status).toBe(200);
    const answer = (await res.json()) as EpisodeTokens;
    const starts = expected.map((_, i) => expected.slice(0, i).reduce((n, s) => n + s.ids.length, 0));
    expect(answer.episodeSegments).toStrictEqual(
      expected.map((s, i) => ({ start: starts[i], length: s.ids.length, endedBecause: s.endedBecause })),
    );
    expect(answer.length).toBe(expected.reduce((n, s) => n + s.ids.length, 0));
    for (const [i, s] of expected.entries())
      expect(answer.tokens.slice(starts[i], starts[i]! + s.ids.length).map((t) => t[0])).toStrictEqual([...s.ids]);
    // Every source span lies inside the episode segment it names.
    for (const span of answer.segments) {
      const owner = answer.episodeSegments[span.episodeSegment]!;
      expect(span.start).toBeGreaterThanOrEqual(owner.start);
      expect(span.start + span.length).toBeLessThanOrEqual(owner.start + owner.length);
    }
    expect(new Set(answer.segments.map((s) => s.episodeSegment))).toStrictEqual(new Set(expected.keys()));

    if (!('segments' in answer.drift)) throw new Error(`drift audit failed: ${answer.drift.error}`);
    expect(answer.drift.toolsNote).toBeNull();
    expect(answer.drift.segments.map((d) => [d.start, d.report?.identical, d.report?.trajectoryTokens])).toStrictEqual(
      expected.map((s, i) => [starts[i], true, s.ids.length]),
    );
    expect(answer.drift.report).toStrictEqual(answer.drift.segments.at(-1)!.report);
  });
});
