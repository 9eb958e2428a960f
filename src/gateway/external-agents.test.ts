import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { firstSampleRequest } from '../__fixtures__/episode-request.js';
import { answer, strandsAgent } from '../../examples/external-strands-ts/agent.js';
import { startEmbeddedEngine, TINY_ARITH_DIR, type EmbeddedEngine } from '../__fixtures__/embedded-engine.js';
import { expectTitoInvariants, recordingEngine } from '../__fixtures__/tito-invariants.js';
import { ArithOptions, arithDataset, generateArith } from '../datasets/arith.js';
import type { Task } from '../datasets/types.js';
import { CancelledError } from '../errors/index.js';
import type { ExternalAgentConfig } from '../recipe/schema.js';
import { RecipeSchema } from '../recipe/schema.js';
import { collectRollout } from '../rollout/collect.js';
import { buildEpisodeKit } from '../run/kit.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { projectRoot } from '../util/paths.js';
import { startExternalAgents, type ExternalAgents } from './external-episode.js';
import '../builtins.js';

// External agents run per episode behind the gateway, in front of the real embedded engine: the
// standard-library Python example as a command, a Strands TS agent behind an HTTP agent server, and
// agents that crash, hang or never call the model.
const PYTHON = process.env.ATK_PYTHON ?? '/usr/bin/python3';
const tasks = generateArith('test', ArithOptions.parse({ max_digits: 2, test_size: 4 }));
let embedded: EmbeddedEngine;
let tokenizer: ModelTokenizer;
const started: ExternalAgents[] = [];

beforeAll(async () => {
  [embedded, tokenizer] = await Promise.all([startEmbeddedEngine('pretrained'), loadModelTokenizer(TINY_ARITH_DIR)]);
}, 120_000);
afterAll(async () => {
  await Promise.all(started.map((s) => s.close()));
  await embedded?.stop();
});

async function agents(config: ExternalAgentConfig, engine = embedded.engine): Promise<ExternalAgents> {
  const runner = await startExternalAgents({
    config,
    recipeDir: projectRoot(),
    engine,
    tokenizer,
    maxTurns: 3,
    maxNewTokens: 32,
    toolCallFormat: 'hermes',
  });
  started.push(runner);
  return runner;
}

function request(task: Task, i: number, timeoutMs = 30_000): Parameters<ExternalAgents['run']>[0] {
  return {
    task,
    env: { episodeId: `0-${i}`, task, state: new Map(), signal: new AbortController().signal },
    policyVersion: 0,
    sampling: { temperature: 0, topP: 1, topK: -1 },
    timeoutMs,
  };
}

const script = (source: string): ExternalAgentConfig => ({ command: [PYTHON, '-c', source], env: {} });

describe('external agents', () => {
  test('returns episodes of the standard-library Python agent whose trajectories are exactly the engine tokens', async () => {
    const recorded = tasks.map(() => recordingEngine(embedded.engine));
    const results = await Promise.all(
      tasks.map(async (task, i) =>
        (
          await agents(
            { command: [PYTHON, join('examples', 'external-python', 'agent.py')], env: {} },
            recorded[i]!.engine,
          )
        ).run(request(task, i)),
      ),
    );
    for (const [i, result] of results.entries()) {
      expect([result.error, result.finishReason]).toStrictEqual([undefined, 'endTurn']);
      expectTitoInvariants(result, recorded[i]!.exchanges);
    }
    const withTool = results.filter((r) => r.toolCalls.length > 0);
    expect(withTool.length).toBeGreaterThan(1);
    for (const result of withTool) {
      expect(result.toolCalls[0]).toMatchObject({
        name: 'calculator',
        status: 'success',
        output: expect.stringMatching(/^-?\d/),
      });
      expect(result.finalText).toMatch(/^Answer: /);
      const tool = result.trajectory.segments.find((s) => s.source === 'tool')!;
      expect(tokenizer.decode(result.trajectory.ids.slice(tool.start, tool.start + tool.length))).toContain(
        `<tool_response>\n${result.toolCalls[0]!.output}\n</tool_response>`,
      );
    }
  });

  test('returns an episode of the TypeScript openai-client example run as a command', async () => {
    const recorded = recordingEngine(embedded.engine);
    const runner = await agents(
      { command: [process.execPath, '--import', 'tsx', join('examples', 'external-typescript', 'agent.ts')], env: {} },
      recorded.engine,
    );
    const result = await runner.run(request(tasks[0]!, 0));
    expect([result.error, result.agentLog]).toStrictEqual([undefined, undefined]);
    expectTitoInvariants(result, recorded.exchanges);
    expect(result.finalText).toBe(
      result.messages
        .filter((m) => (m as { role: string }).role === 'assistant')
        .map((m) => (m as { content: string }).content)
        .at(-1),
    );
  });

  test('returns failed episodes with the stderr tail for a crash, a hang and an agent that never calls the model', async () => {
    const crash = await (
      await agents(script('import sys; sys.stderr.write("loading...\\nValueError: boom\\n"); sys.exit(3)'))
    ).run(request(tasks[0]!, 0));
    expect([crash.finishReason, crash.error, crash.agentLog]).toStrictEqual([
      'error',
      'agent exited with code 3: ValueError: boom',
      'loading...\nValueError: boom',
    ]);
    const hang = await (await agents({ ...script('import time; time.sleep(60)'), timeout_s: 1 })).run(
      request(tasks[0]!, 1),
    );
    expect([hang.finishReason, hang.error]).toStrictEqual(['timeout', 'agent timed out after 1 s']);
    const idle = await (await agents(script('import sys; sys.stdin.read(); print("{}")'))).run(request(tasks[0]!, 2));
    expect([idle.finishReason, idle.error, idle.trajectory.length]).toStrictEqual([
      'error',
      'the agent never called the model',
      0,
    ]);
  });

  test('rejects with CancelledError when the run is cancelled, and kills the agent with the children it started', async () => {
    const pids = join(mkdtempSync(join(tmpdir(), 'atk-cancel-')), 'pids');
    const source = `import os, subprocess, time\nchild = subprocess.Popen(["sleep", "60"])\nopen(${JSON.stringify(pids)}, "w").write(f"{os.getpid()} {child.pid}")\ntime.sleep(60)`;
    const runner = await agents(script(source));
    const cancel = new AbortController();
    const running = runner.run({ ...request(tasks[0]!, 0), signal: cancel.signal });
    for (let i = 0; i < 100 && !existsSync(pids); i++) await sleep(100);
    cancel.abort();
    await expect(running).rejects.toBeInstanceOf(CancelledError);
    // A killed orphan stays a zombie until PID 1 reaps it (containers may never do): zombies count as gone.
    const stillRunning = (pid: number): boolean => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    const started = readFileSync(pids, 'utf8').split(' ').map(Number);
    for (let i = 0; i < 20 && started.some(stillRunning); i++) await sleep(100);
    expect(started.filter(stillRunning)).toStrictEqual([]);
  });

  test('runs a Strands TypeScript agent behind an HTTP agent server, with the reward it reports', async () => {
    const server = await agentServer(async ({ task, base_url, api_key }) => {
      const text = await answer(strandsAgent(base_url, api_key), task.prompt);
      await fetch(`${base_url.replace(/\/v1$/, '')}/reward`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api_key}` },
        body: JSON.stringify({ reward: text === `Answer: ${task.answer}` ? 1 : 0 }),
      });
      return { answer: text };
    });
    try {
      const recorded = recordingEngine(embedded.engine);
      const runner = await agents({ url: `${server.url}/rollout` }, recorded.engine);
      const req = request(tasks[1]!, 0);
      const result = await runner.run(req);
      expect(result.error).toBeUndefined();
      expectTitoInvariants(result, recorded.exchanges);
      expect(result.stats.turns).toBeGreaterThan(1);
      expect(result.stats.historyRewrites).toBe(0);
      expect(req.env.state.get('atk.reported_reward')).toBe(result.finalText === `Answer: ${tasks[1]!.answer}` ? 1 : 0);
      const failing = await (await agents({ url: `${server.url}/missing` })).run(request(tasks[1]!, 1));
      expect(failing.error).toMatch(/^agent server http:\/\/127\.0\.0\.1:\d+\/missing answered HTTP 404/);
    } finally {
      await new Promise((resolve) => server.server.close(resolve));
    }
  });

  test('scores the reward an agent reports in its result, through a kit built from a recipe', async () => {
    const source = [
      'import json, os, sys, urllib.request',
      'task = json.load(sys.stdin)',
      'body = json.dumps({"messages": [{"role": "user", "content": task["prompt"]}]}).encode()',
      'req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body, headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "content-type": "application/json"})',
      'reply = json.load(urllib.request.urlopen(req))["choices"][0]["message"]',
      'print(json.dumps({"answer": reply["content"], "reward": 0.25}))',
    ].join('\n');
    const recipe = RecipeSchema.parse({
      name: 't',
      model: { path: TINY_ARITH_DIR },
      dataset: { name: 'arith' },
      reward: { name: 'reported', success_threshold: 0.2 },
      agent: { max_new_tokens: 32, external: { command: [PYTHON, '-c', source] } },
    });
    const kit = await buildEpisodeKit({
      recipe,
      recipeDir: projectRoot(),
      recipeFile: 't.yaml',
      dataset: arithDataset,
      engine: embedded.engine,
      tokenizer,
      warn: () => undefined,
    });
    try {
      const rollout = await collectRollout(kit, firstSampleRequest(tasks[2]!));
      expect(rollout.error).toBeUndefined();
      expect([rollout.failed, rollout.reward, rollout.success, rollout.episode.stats.turns]).toStrictEqual([
        false,
        0.25,
        true,
        1,
      ]);
    } finally {
      await kit.close?.();
    }
  });
});

/** A long-running agent server on loopback: POST {task, base_url, api_key, episode_id}, answered with `handle`'s JSON. */
async function agentServer(
  handle: (body: { task: Task & { answer: string }; base_url: string; api_key: string }) => Promise<unknown>,
): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    if (req.url !== '/rollout') {
      res.writeHead(404).end('no such route');
      return;
    }
    let text = '';
    for await (const chunk of req) text += chunk;
    const result = await handle(JSON.parse(text));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
