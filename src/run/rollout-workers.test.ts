import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import diagnostics from 'node:diagnostics_channel';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { RECORDED_TASKS, scriptedKit, scriptedModel, writeFixtureRecipe } from '../__fixtures__/recorded-run.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createRouterEngine } from '../engines/router.js';
import type { Engine } from '../engines/types.js';
import { createVllmClient } from '../engines/vllm.js';
import { CancelledError } from '../errors/index.js';
import { loadRecipe } from '../recipe/load.js';
import { collectRollout, type EpisodeKit, type Rollout, workerEpisodes } from '../rollout/collect.js';
import { openWait, StallWatch, type WaitRecorder } from '../rollout/stall-watch.js';
import { watchedKit } from '../rollout/watched-kit.js';
import { loadModelTokenizer } from '../tokens/index.js';
import { packRollout } from './rollout-transfer.js';
import { startRolloutWorkers } from './rollout-workers.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-rollout-workers-'));
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/**
 * The fixture recipe's kit over the scripted engine double, and the same kit with `count` workers that
 * build their own from the recipe and reach the engine through `wrap(engine)`.
 */
async function kits(
  recipeFile: string,
  count: number,
  wrap: (engine: Engine) => Engine = (engine) => engine,
): Promise<{ local: EpisodeKit; pooled: EpisodeKit; double: EngineDouble }> {
  const { kit, double } = await scriptedKit(recipeFile);
  const loaded = await loadRecipe(recipeFile);
  const workers = await startRolloutWorkers({
    count,
    setup: { recipe: loaded.recipe, recipeDir: loaded.dir, recipeFile, modelDir: TINY_TOKENIZER_DIR, tokenizer: {} },
    engine: kit.engine,
    warn: () => undefined,
  });
  closers.push(
    () => double.close(),
    async () => kit.close?.(),
    () => workers.close(),
  );
  // Episodes make their engine requests with the collecting kit's engine (the run wraps it to watch for stalls).
  return { local: kit, pooled: { ...kit, engine: wrap(kit.engine), runner: workerEpisodes(workers) }, double };
}

/** A rollout as its trajectory line compares: everything but the clocks. */
function comparable(rollout: Rollout): unknown {
  const packed = packRollout(rollout);
  const { wallMs: _w, engineMs: _e, ...stats } = packed.episode.stats;
  return { ...packed, episode: { ...packed.episode, stats } };
}

function request(task: (typeof RECORDED_TASKS)[number], sample: number, policyVersion: number | (() => number)) {
  return { task, group: 0, sample, seed: 11 + sample, temperature: 1, topP: 1, topK: -1, policyVersion };
}

/** The fixture recipe in `folder`, its reward the module `source` (written as grade.ts beside it). */
async function recipeGradedBy(folder: string, source: string): Promise<string> {
  const recipeFile = await writeFixtureRecipe(folder);
  writeFileSync(join(folder, 'grade.ts'), source);
  const yaml = readFileSync(recipeFile, 'utf8').replace(
    /reward:\n {2}name: math_answer\n {2}options:\n {4}formats: \[answer\]\n {4}fallback_last_number: false\n/,
    'reward:\n  module: ./grade.ts\n',
  );
  expect(yaml).toContain('module: ./grade.ts');
  writeFileSync(recipeFile, yaml);
  return recipeFile;
}

describe('rollout workers', () => {
  it('return the rollouts the run thread returns: tokens, versions, messages, rewards', async () => {
    const { local, pooled } = await kits(await writeFixtureRecipe(join(dir, 'same')), 2);
    const served = (): number => 3;
    const requests = RECORDED_TASKS.flatMap((task) => [0, 1].map((sample) => request(task, sample, served)));
    const here = await Promise.all(requests.map((r) => collectRollout(local, r)));
    const there = await Promise.all(requests.map((r) => collectRollout(pooled, r)));
    expect(there.map(comparable)).toStrictEqual(here.map(comparable));
    expect(there.some((r) => r.success) && there.some((r) => !r.success)).toBe(true);
    // Each model turn carries the version the run thread served when the request was sent.
    const versions = there.flatMap((r) => r.episode.trajectory.segments.flatMap((s) => s.policyVersion ?? []));
    expect(versions.length).toBeGreaterThan(0);
    expect(new Set(versions)).toStrictEqual(new Set([3]));
  });

  it('send each engine request from the worker, as the run thread routed and named it', async () => {
    const tokenizer = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const adapterDouble = await startEngineDouble({
      models: ['policy@4'],
      script: (r) => scriptedModel(tokenizer, r.promptIds),
    });
    closers.push(() => adapterDouble.close());
    const adapterReplica = createVllmClient({ baseUrl: adapterDouble.url, model: 'policy@4' });
    let seenByRunThread = 0;
    // The prompt lengths the run thread saw, and the ids among them: the ids stay on the worker.
    const promptLengths: number[] = [];
    let idsSeen = 0;
    const { pooled, double } = await kits(await writeFixtureRecipe(join(dir, 'routed')), 2, (engine) => {
      const router = createRouterEngine([engine, adapterReplica]);
      const generate: Engine['generate'] = (prompt, params, signal) => {
        seenByRunThread++;
        promptLengths.push(prompt.length);
        idsSeen += prompt.filter((id) => id !== undefined).length;
        return router.generate(prompt, params, signal);
      };
      return { ...router, generate };
    });
    // Every HTTP request this thread starts; the workers' are on their own threads.
    let sentByRunThread = 0;
    const onRequest = (): void => void sentByRunThread++;
    diagnostics.subscribe('http.client.request.start', onRequest);
    try {
      const requests = RECORDED_TASKS.flatMap((task) => [0, 1, 2].map((sample) => request(task, sample, 0)));
      const rollouts = await Promise.all(requests.map((r) => collectRollout(pooled, r)));
      expect(rollouts.every((r) => !r.failed)).toBe(true);
    } finally {
      diagnostics.unsubscribe('http.client.request.start', onRequest);
    }
    expect(sentByRunThread).toBe(0);
    // The router on this thread spread the requests; each replica was asked for its own model name.
    const byReplica = [double.requests, adapterDouble.requests].map((requests) => requests.map((r) => r.model));
    expect(byReplica[0]!.length).toBeGreaterThan(0);
    expect(byReplica[1]!.length).toBeGreaterThan(0);
    expect(new Set(byReplica[0])).toStrictEqual(new Set(['policy']));
    expect(new Set(byReplica[1])).toStrictEqual(new Set(['policy@4']));
    expect(byReplica[0]!.length + byReplica[1]!.length).toBe(seenByRunThread);
    const sentLengths = [...double.requests, ...adapterDouble.requests].map((r) => r.promptIds.length);
    expect(promptLengths.toSorted((x, y) => x - y)).toStrictEqual(sentLengths.toSorted((x, y) => x - y));
    expect(idsSeen).toBe(0);
  });

  it('fail an episode whose engine request the engine refuses, with the engine message', async () => {
    const refusing = await startEngineDouble({
      script: () => ({ status: 400, body: { error: { message: 'This model maximum context length is 8 tokens' } } }),
    });
    closers.push(() => refusing.close());
    const { pooled } = await kits(await writeFixtureRecipe(join(dir, 'refused')), 1, () =>
      createVllmClient({ baseUrl: refusing.url, model: 'policy' }),
    );
    const rollout = await collectRollout(pooled, request(RECORDED_TASKS[0]!, 0, 0));
    expect(rollout).toMatchObject({ failed: true, errorKind: 'engine' });
    expect(rollout.error).toMatch(/maximum context length is 8 tokens/);
    expect(refusing.requests).toHaveLength(1);
  });

  it("register the tool calls and rewards of their episodes in the run thread's stall watch", async () => {
    const recipeFile = await writeFixtureRecipe(join(dir, 'watched'));
    // The reward waits until the test has seen it open in the run thread's watch.
    writeFileSync(
      join(dir, 'watched', 'grade.ts'),
      [
        "import { existsSync } from 'node:fs';",
        'export default async () => {',
        `  while (!existsSync(${JSON.stringify(join(dir, 'watched', 'seen'))})) await new Promise((r) => setTimeout(r, 20));`,
        '  return 1;',
        '};',
        '',
      ].join('\n'),
    );
    writeFileSync(
      recipeFile,
      readFileSync(recipeFile, 'utf8').replace(
        /reward:\n {2}name: math_answer\n {2}options:\n {4}formats: \[answer\]\n {4}fallback_last_number: false\n/,
        'reward:\n  module: ./grade.ts\n',
      ),
    );
    const { pooled } = await kits(recipeFile, 1);
    let clock = 0;
    const watch = new StallWatch({ now: () => clock, minMs: 0 });
    watch.stepStarted(0);
    clock = 1;
    watch.stepFinished();
    watch.stepStarted(1);
    // The run thread's watch, with a log of what reached it.
    const log: string[] = [];
    const begin: WaitRecorder['begin'] = (component, detail) => {
      log.push(`open ${component}: ${detail}`);
      const end = watch.begin(component, detail);
      return (error) => {
        log.push(`closed ${component}: ${detail}${error === undefined ? '' : ` (${String(error)})`}`);
        end(error);
      };
    };
    const recorder: WaitRecorder = { begin, wait: (c, d, work) => openWait(begin, c, d, work) };
    const [task] = RECORDED_TASKS;
    const rollout = collectRollout(watchedKit(pooled, recorder), request(task!, 0, 0));
    const reward = `reward: reward of task ${task!.id}`;
    while (!log.includes(`open ${reward}`)) await new Promise((r) => setTimeout(r, 20));
    // While the reward runs in the worker, the run thread's stall report names it.
    clock = 1000;
    expect(watch.check()?.waits.map((w) => `${w.component}: ${w.detail}`)).toStrictEqual([reward]);
    writeFileSync(join(dir, 'watched', 'seen'), '');
    expect((await rollout).reward).toBe(1);
    expect(log).toStrictEqual([
      expect.stringMatching(/^open engine: generate from \d+ prompt tokens$/),
      expect.stringMatching(/^closed engine: generate from \d+ prompt tokens$/),
      'open tool: call of calculator',
      'closed tool: call of calculator',
      expect.stringMatching(/^open engine: generate from \d+ prompt tokens$/),
      expect.stringMatching(/^closed engine: generate from \d+ prompt tokens$/),
      `open ${reward}`,
      `closed ${reward}`,
    ]);
  });

  it('spread a burst of episodes evenly over the workers', async () => {
    const threads = join(dir, 'spread', 'threads.log');
    const recipeFile = await recipeGradedBy(
      join(dir, 'spread'),
      "import { appendFileSync } from 'node:fs';\nimport { threadId } from 'node:worker_threads';\n" +
        `export default () => { appendFileSync(${JSON.stringify(threads)}, threadId + '\\n'); return 1; };\n`,
    );
    const { pooled } = await kits(recipeFile, 2);
    // A step hands the pool all its episodes at once, before any of them has been counted on a worker.
    const burst = RECORDED_TASKS.flatMap((task) => [0, 1].map((sample) => request(task, sample, 0)));
    const rollouts = await Promise.all(burst.map((r) => collectRollout(pooled, r)));
    expect(rollouts.map((r) => r.reward)).toEqual(burst.map(() => 1));
    const perThread = new Map<string, number>();
    for (const id of readFileSync(threads, 'utf8').trim().split('\n')) perThread.set(id, (perThread.get(id) ?? 0) + 1);
    expect([...perThread.values()]).toEqual([burst.length / 2, burst.length / 2]);
  });

  it('fail only the episodes of a worker that dies, and start a new worker for the next', async () => {
    const recipeFile = await recipeGradedBy(
      join(dir, 'crash'),
      "export default (outcome: { task: { id: string } }) => (outcome.task.id === 'mul-1' ? process.exit(3) : 1);\n",
    );
    const { pooled } = await kits(recipeFile, 1);
    const [add, mul, sub] = RECORDED_TASKS;
    expect((await collectRollout(pooled, request(add!, 0, 0))).reward).toBe(1);
    const crashed = await collectRollout(pooled, request(mul!, 0, 0));
    expect(crashed).toMatchObject({ failed: true, reward: 0, errorKind: 'scheduler' });
    expect(crashed.error).toMatch(/rollout worker exited with code 3/);
    expect(await collectRollout(pooled, request(sub!, 0, 0))).toMatchObject({ failed: false, reward: 1 });
  });

  it('cancel an episode in a worker when its signal aborts, before or while it runs', async () => {
    const stop = new AbortController();
    // The signal aborts as the episode's first engine request reaches the run's thread.
    const { pooled } = await kits(await writeFixtureRecipe(join(dir, 'cancel')), 1, (engine) => ({
      ...engine,
      generate: (prompt, params, signal) => {
        stop.abort(new CancelledError('stopped mid-episode'));
        return engine.generate(prompt, params, signal);
      },
    }));
    const during = collectRollout(pooled, { ...request(RECORDED_TASKS[0]!, 0, 0), signal: stop.signal });
    await expect(during).rejects.toThrow('stopped mid-episode');
    const early = new AbortController();
    const before = collectRollout(pooled, { ...request(RECORDED_TASKS[1]!, 0, 0), signal: early.signal });
    early.abort(new CancelledError('stopped before it began'));
    await expect(before).rejects.toBeInstanceOf(CancelledError);
    // The worker is still there for the next episode.
    expect(await collectRollout(pooled, request(RECORDED_TASKS[2]!, 0, 0))).toMatchObject({ failed: false });
  });

  it('refuse to start when a worker cannot build its kit, naming why', async () => {
    const recipeFile = await writeFixtureRecipe(join(dir, 'broken'));
    const loaded = await loadRecipe(recipeFile);
    await expect(
      startRolloutWorkers({
        count: 2,
        setup: {
          recipe: loaded.recipe,
          recipeDir: loaded.dir,
          recipeFile,
          modelDir: join(dir, 'nowhere'),
          tokenizer: {},
        },
        engine: (await scriptedKit(recipeFile)).kit.engine,
        warn: () => undefined,
      }),
    ).rejects.toThrow(/tokenizer\.json/);
  });

  it('are refused beside a simulated user on an engine each worker would launch', async () => {
    const recipeFile = await writeFixtureRecipe(join(dir, 'user-engine'));
    const user = 'user: {kind: engine, model: Qwen/Qwen3-8B, engine: {kind: vllm, gpus: [1]}}\nrollout: {workers: 2}\n';
    writeFileSync(recipeFile, readFileSync(recipeFile, 'utf8') + user);
    const error = (await loadRecipe(recipeFile).then(
      () => undefined,
      (e: unknown) => e,
    )) as { issues?: { path: string; message: string }[] };
    expect(error.issues?.find((i) => i.path === 'rollout.workers')?.message).toMatch(
      /launch its own vllm engine for the simulated user/,
    );
    // Attached by URL, the user's engine is shared: no such refusal.
    writeFileSync(
      recipeFile,
      readFileSync(recipeFile, 'utf8').replace(
        'engine: {kind: vllm, gpus: [1]}',
        'engine: {kind: url, url: http://127.0.0.1:1}',
      ),
    );
    const attached = (await loadRecipe(recipeFile).then(
      () => undefined,
      (e: unknown) => e,
    )) as { issues?: { path: string }[] } | undefined;
    expect(attached?.issues?.some((i) => i.path === 'rollout.workers') ?? false).toBe(false);
  });
});
