/**
 * The other kinds of bring-your-own component in one run with the embedded engine: a CSV dataset,
 * a system prompt file with task-field placeholders, a stdio MCP server and an MCP server over HTTP
 * beside a tool module, and a weighted sum of a module, a command and an LLM-judge reward (a
 * deterministic judge double here). A second run is the custom example (reached through extends)
 * with its calculator served over HTTP, where the tiny model calls it: the server fails every other
 * call, and the per-tool call and error counts are checked against what it saw.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startMcpHttpServer, type McpHttpServer } from '../../src/__fixtures__/mcp-http-server.js';
import { loadModelTokenizer, TokenTrajectory, type TrajectoryJSON } from '../../src/tokens/index.js';
import { projectRoot } from '../../src/util/paths.js';
import { atkRun, onlyRun, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

const EXAMPLE = join(projectRoot(), 'recipes', 'examples', 'custom');
const MCP_SERVER = join(projectRoot(), 'src', '__fixtures__', 'mcp-server.mjs');

// The judge double: SCORE 10 when the graded answer holds the reference answer, else SCORE 0.
const judged: string[] = [];
const judge = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString()));
  req.on('end', () => {
    const body = JSON.parse(text) as { messages: { content: string }[] };
    const user = body.messages[1]!.content;
    judged.push(user);
    const reference = /Reference answer:\s*(\S+)/.exec(user)?.[1];
    const graded = user.slice(user.indexOf('Answer to grade:'));
    const score = reference !== undefined && graded.includes(reference) ? 10 : 0;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: `SCORE: ${score}` } }] }));
  });
});
let judgeUrl = '';

// The HTTP MCP server's calculator: the tool name and input the tiny model was trained on; every second call fails.
const calculations = { calls: 0, errors: 0 };
let mcpHttp: McpHttpServer;
beforeAll(async () => {
  await new Promise<void>((resolve) => judge.listen(0, '127.0.0.1', resolve));
  judgeUrl = `http://127.0.0.1:${(judge.address() as AddressInfo).port}/v1`;
  mcpHttp = await startMcpHttpServer((mcp) => {
    mcp.registerTool(
      'calculator',
      { description: 'Evaluate an arithmetic expression.', inputSchema: { expression: z.string() } },
      async ({ expression }) => {
        if (++calculations.calls % 2 === 0) {
          calculations.errors++;
          throw new Error('calculator is busy');
        }
        const value = /^[\d\s+\-*/().]+$/.test(expression)
          ? (Function(`"use strict"; return (${expression});`)() as number)
          : NaN;
        return { content: [{ type: 'text', text: String(value) }] };
      },
    );
  });
});
afterAll(async () => {
  await new Promise<void>((resolve) => judge.close(() => resolve()));
  await mcpHttp.close();
});

type ToolStats = { toolCallsByTool: Record<string, number>; toolErrorsByTool: Record<string, number> };

/** Mean per episode of each tool's count in `key`. */
function perToolMeans(stats: readonly ToolStats[], key: keyof ToolStats): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of stats)
    for (const [name, n] of Object.entries(s[key])) out[name] = (out[name] ?? 0) + n / stats.length;
  return out;
}

function serverPids(marker: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('custom components with the embedded engine', () => {
  it('returns a finished run scored by module, command and judge rewards, with MCP servers over stdio and HTTP, and tool calls and errors counted per tool', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-e2e-components-'));
    copyFileSync(join(EXAMPLE, 'tools.ts'), join(dir, 'tools.ts'));
    copyFileSync(join(EXAMPLE, 'grade.ts'), join(dir, 'grade.ts'));
    writeFileSync(
      join(dir, 'tasks.csv'),
      'question,answer,level\nWhat is 12 * 7?,84,easy\nWhat is 315 + 486?,801,easy\nWhat is 903 - 458?,445,medium\nWhat is 64 * 23?,1472,medium\n',
    );
    writeFileSync(
      join(dir, 'system.md'),
      'You solve {{level}} arithmetic problems. Use the calculator, then give the number.\n',
    );
    writeFileSync(
      join(dir, 'length.mjs'),
      "let s = '';\nprocess.stdin.on('data', (c) => (s += c));\nprocess.stdin.on('end', () => {\n  const episode = JSON.parse(s);\n  console.log(JSON.stringify({ short: episode.final_text.length < 200 ? 1 : 0, calls: episode.tool_calls.length }));\n});\n",
    );
    const marker = `atk-e2e-${process.pid}-${Date.now()}`;
    writeFileSync(
      join(dir, 'kinds.yaml'),
      [
        'name: custom-kinds',
        'model: {path: models/tiny-arith, engine: {kind: embedded}, trainer: {threads: 1}}',
        'dataset: {path: tasks.csv, fields: {prompt: question, answer: answer, metadata: [level]}, prompt_template: "{{question}}"}',
        'tools:',
        '  - {module: ./tools.ts, export: calculator}',
        `  - {mcp: {command: node, args: [${JSON.stringify(MCP_SERVER)}, ${marker}]}}`,
        `  - {mcp: {url: "${mcpHttp.url}"}, prefix: web}`,
        'agent: {system_prompt: {file: system.md}, max_turns: 3, max_new_tokens: 64}',
        'reward:',
        '  success_threshold: 1',
        '  components:',
        '    - {module: ./grade.ts, export: grade}',
        '    - {command: [node, length.mjs], weight: 0.5}',
        `    - {judge: {url: "${judgeUrl}", model: double, rubric: "Is the final number correct?"}, weight: 0.5}`,
        'algorithm: {name: grpo, group_size: 4, learning_rate: 1.0e-4}',
        'train: {steps: 1, tasks_per_step: 4, eval_before: false, eval_after: false}',
        '',
      ].join('\n'),
    );

    const runsDir = tempRunsDir();
    const result = await atkRun([join(dir, 'kinds.yaml')], runsDir, 90_000);
    expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    const run = onlyRun(runsDir, 'custom-kinds');
    expect(readJson(join(run, 'manifest.json')).status).toBe('finished');
    expect(serverPids(marker)).toStrictEqual([]);

    const train = readJsonl(join(run, 'metrics.jsonl')).filter((l) => l.kind === 'train');
    expect(train.map((l) => l.step)).toStrictEqual([1]);
    const episodes = readJsonl(join(run, 'trajectories', 'step-00001.jsonl'));
    expect(episodes).toHaveLength(16);
    // The prompt the model saw offers both MCP servers' tools beside the module's tool.
    const tokenizer = await loadModelTokenizer(join(projectRoot(), 'models', 'tiny-arith'));
    const prompt = tokenizer.decode(TokenTrajectory.fromJSON(episodes[0]!.trajectory as TrajectoryJSON).ids);
    for (const tool of ['calculator(expression)', 'add(a, b)', 'shout(text)', 'web_calculator(expression)'])
      expect(prompt).toContain(tool);
    // Each tool's calls and error results per episode, as the episodes recorded them.
    const stats = episodes.map((e) => e.stats as ToolStats);
    for (const [name, n] of Object.entries(perToolMeans(stats, 'toolCallsByTool')))
      expect(train[0]![`tool_calls/${name}`]).toBeCloseTo(n, 9);
    for (const [name, n] of Object.entries(perToolMeans(stats, 'toolErrorsByTool')))
      expect(train[0]![`tool_errors/${name}`]).toBeCloseTo(n, 9);

    for (const episode of episodes) {
      expect(episode.failed).toBe(false);
      const parts = episode.reward_parts as Record<string, number>;
      expect(Object.keys(parts)).toEqual(expect.arrayContaining(['grade', 'command', 'judge']));
      // The weighted sum of the components is the episode's reward.
      expect(episode.reward).toBeCloseTo(parts.grade! + 0.5 * parts.command! + 0.5 * parts.judge!, 6);
      const messages = JSON.stringify(episode.messages);
      // The system prompt file, with the task's level filled in.
      expect(messages).toMatch(/You solve (easy|medium) arithmetic problems/);
    }
    expect(judged).toHaveLength(16);
    expect(judged.every((text) => /Reference answer:/.test(text))).toBe(true);
  }, 180_000);

  it('returns the calls of a tool served by an MCP server over HTTP, counted per tool with their errors', async () => {
    // The custom example with its calculator served over HTTP: the tiny model calls it as trained.
    const dir = mkdtempSync(join(tmpdir(), 'atk-e2e-http-'));
    Object.assign(calculations, { calls: 0, errors: 0 });
    const recipe = join(dir, 'http.yaml');
    writeFileSync(
      recipe,
      [
        `extends: ${JSON.stringify(join(EXAMPLE, 'custom.yaml'))}`,
        'name: custom-http',
        `tools: [{mcp: {url: "${mcpHttp.url}"}}]`,
        'train: {steps: 1, eval_before: false, eval_after: false}',
        '',
      ].join('\n'),
    );
    const runsDir = tempRunsDir();
    const result = await atkRun([recipe], runsDir, 90_000);
    expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    const run = onlyRun(runsDir, 'custom-http');
    const [train] = readJsonl(join(run, 'metrics.jsonl')).filter((l) => l.kind === 'train');
    const episodes = readJsonl(join(run, 'trajectories', 'step-00001.jsonl'));
    const stats = episodes.map((e) => e.stats as ToolStats);
    // Every call the server saw, and every one it failed, is counted under the tool's name; a call
    // it never saw was rejected before it ran (bad JSON or arguments), so it is an error as well.
    const calls = stats.reduce((a, s) => a + (s.toolCallsByTool.calculator ?? 0), 0);
    const errors = stats.reduce((a, s) => a + (s.toolErrorsByTool.calculator ?? 0), 0);
    expect(calculations.errors).toBeGreaterThan(0);
    expect(calls - calculations.calls).toBe(errors - calculations.errors);
    expect(errors).toBeGreaterThanOrEqual(calculations.errors);
    expect([train!['tool_calls/calculator'], train!['tool_errors/calculator']]).toStrictEqual([
      calls / episodes.length,
      errors / episodes.length,
    ]);
  }, 120_000);
});
