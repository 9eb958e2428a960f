import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { runInit } from '../cli/init.js';
import { loadRecipe } from '../recipe/index.js';
import { projectRoot } from '../util/paths.js';

const PYTHON = process.env.ATK_PYTHON ?? '/usr/bin/python3';

describe('external agent examples', () => {
  test('returns a compiled Python Strands example (npm run test:agents trains through it with strands-agents installed)', async () => {
    const out = mkdtempSync(join(tmpdir(), 'atk-pyc-'));
    try {
      const result = await execa(
        PYTHON,
        [
          '-c',
          'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)',
          join(projectRoot(), 'examples', 'external-strands-py', 'strands_agent.py'),
          join(out, 'a.pyc'),
        ],
        { reject: false },
      );
      expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  test('returns a valid starter from atk init --example external, with the standard-library agent beside it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-init-external-'));
    const written = await runInit({ example: 'external', path: join(dir, 'mine'), force: false });
    expect(written.companions.map((p) => p.slice(dir.length + 1))).toStrictEqual(['mine/agent.py']);
    const loaded = await loadRecipe(written.recipePath);
    expect(loaded.recipe.agent.external).toStrictEqual({ command: ['python3', 'agent.py'], env: {}, timeout_s: 60 });
    expect(readFileSync(join(dir, 'mine', 'agent.py'), 'utf8')).toBe(
      readFileSync(join(projectRoot(), 'examples', 'external-python', 'agent.py'), 'utf8'),
    );
  });

  test('rejects recipe tools, a simulated user and rollout workers beside agent.external, naming the keys', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-external-check-'));
    const file = join(dir, 'r.yaml');
    writeFileSync(
      file,
      [
        'name: r',
        `model: {path: ${join(projectRoot(), 'models', 'tiny-arith')}}`,
        'dataset: {name: arith}',
        'reward: {name: math_answer}',
        'tools: [{name: calculator}]',
        'user: {kind: scripted, messages: [hi]}',
        'agent: {external: {command: [python3, agent.py]}}',
        'rollout: {workers: 2}',
      ].join('\n'),
    );
    const error = (await loadRecipe(file).then(
      () => undefined,
      (e: unknown) => e,
    )) as { issues?: { path: string; line: number }[] };
    expect(error.issues?.map((i) => [i.path, i.line])).toStrictEqual([
      ['tools.0', 5],
      ['user', 6],
      ['rollout.workers', 8],
    ]);
  });

  test('returns the answer from the standard-library agent when a server drops its idle kept-alive connection between calls', async () => {
    // The agent keeps one connection per episode; this server answers a calculator call, then drops the
    // connection without saying so (as an idle timeout does), then answers the final message.
    const connections: number[] = [];
    const seen: unknown[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const messages = (JSON.parse(body) as { messages: unknown[] }).messages;
        seen.push(messages.at(-1));
        const message =
          seen.length === 1
            ? {
                role: 'assistant',
                content: null,
                tool_calls: [
                  { id: 'c1', type: 'function', function: { name: 'calculator', arguments: '{"expression": "6*7"}' } },
                ],
              }
            : { role: 'assistant', content: 'Answer: 42' };
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: 'stop' }] }));
        if (seen.length === 1) res.on('finish', () => req.socket.destroy());
      });
    });
    server.on('connection', () => connections.push(connections.length));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const result = await execa(PYTHON, [join(projectRoot(), 'examples', 'external-python', 'agent.py')], {
        input: JSON.stringify({ id: 't', prompt: 'What is 6*7?' }),
        env: { OPENAI_BASE_URL: url, OPENAI_API_KEY: 'k' },
        timeout: 60_000,
      });
      expect(JSON.parse(result.stdout.trim().split('\n').at(-1)!)).toStrictEqual({ answer: 'Answer: 42' });
      expect(seen).toStrictEqual([
        { role: 'user', content: 'What is 6*7?' },
        { role: 'tool', tool_call_id: 'c1', content: '42' },
      ]);
      expect(connections).toHaveLength(2); // one dropped, one opened again for the resent call
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
