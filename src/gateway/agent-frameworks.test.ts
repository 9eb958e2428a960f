import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runAtk } from '../__fixtures__/atk-process.js';
import { type EmbeddedEngine, startEmbeddedEngine, TINY_ARITH_DIR } from '../__fixtures__/embedded-engine.js';
import { expectTitoInvariants, recordingEngine } from '../__fixtures__/tito-invariants.js';
import { ArithOptions, generateArith } from '../datasets/arith.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { projectRoot } from '../util/paths.js';
import { type ExternalAgents, startExternalAgents } from './external-episode.js';
import '../builtins.js';

// The agent frameworks users write, unchanged but for the base URL, against the gateway in front of the
// real embedded engine: each episode's trajectory must be exactly the tokens the engine was sent and
// produced, and `atk run` must train through them. Their packages come from a venv of their own
// (examples/requirements-agents.txt), which `npm run test:agents` makes and names in ATK_AGENTS_PYTHON.
const PYTHON = process.env.ATK_AGENTS_PYTHON;
const AGENTS = [
  ['Strands Agents', 'examples/external-strands-py/strands_agent.py'],
  ['the openai client', 'examples/external-openai-py/agent.py'],
  ['LangChain', 'examples/external-langchain-py/agent.py'],
] as const;
const tasks = generateArith('test', ArithOptions.parse({ max_digits: 2, test_size: 4 }));
let embedded: EmbeddedEngine | undefined;
let tokenizer: ModelTokenizer;
const started: ExternalAgents[] = [];
const dirs: string[] = [];

describe.skipIf(!PYTHON)(
  'agent frameworks through the gateway (skipped without ATK_AGENTS_PYTHON: run npm run test:agents)',
  () => {
    beforeAll(async () => {
      [embedded, tokenizer] = await Promise.all([
        startEmbeddedEngine('pretrained'),
        loadModelTokenizer(TINY_ARITH_DIR),
      ]);
    }, 120_000);
    afterAll(async () => {
      await Promise.all(started.map((s) => s.close()));
      await embedded?.stop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    test.each(AGENTS)(
      'returns episodes of %s whose trajectories are exactly the engine tokens, tool calls included',
      async (_name, file) => {
        const results = await Promise.all(
          tasks.map(async (task, i) => {
            const recorded = recordingEngine(embedded!.engine);
            const runner = await startExternalAgents({
              config: { command: [PYTHON!, join(projectRoot(), file)], env: {} },
              recipeDir: projectRoot(),
              engine: recorded.engine,
              tokenizer,
              maxTurns: 3,
              maxNewTokens: 32,
              toolCallFormat: 'hermes',
            });
            started.push(runner);
            const result = await runner.run({
              task,
              env: { episodeId: `0-${i}`, task, state: new Map(), signal: new AbortController().signal },
              policyVersion: 0,
              sampling: { temperature: 0, topP: 1, topK: -1 },
              timeoutMs: 120_000,
            });
            return { result, exchanges: recorded.exchanges };
          }),
        );
        for (const { result, exchanges } of results) {
          expect([result.error, result.agentLog, result.finishReason, result.stats.historyRewrites]).toStrictEqual([
            undefined,
            undefined,
            'endTurn',
            0,
          ]);
          expectTitoInvariants(result, exchanges);
        }
        const calls = results.flatMap(({ result }) => result.toolCalls);
        expect(calls.length).toBeGreaterThan(0);
        for (const call of calls) expect(call).toMatchObject({ name: 'calculator', status: 'success' });
      },
      300_000,
    );

    test.each(AGENTS)(
      'trains the tiny model two steps through atk run with %s as the agent',
      async (_name, file) => {
        const runsDir = mkdtempSync(join(tmpdir(), 'atk-agent-frameworks-'));
        dirs.push(runsDir);
        const run = await runAtk(
          [
            'run',
            join(projectRoot(), 'recipes', 'external-agent.yaml'),
            `agent.external.command=[${PYTHON}, ${join(projectRoot(), file)}]`,
            'train.steps=2',
            'train.tasks_per_step=2',
            'algorithm.group_size=8',
            'train.eval_before=false',
            'train.eval_after=false',
            'train.save_every=0',
            `output.runs_dir=${runsDir}`,
          ],
          { cwd: runsDir },
        );
        expect([run.exitCode, run.stderr]).toStrictEqual([0, '']);
        const dir = join(runsDir, 'external-agent', 'v001');
        const train = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, number | string>)
          .filter((l) => l.kind === 'train');
        expect(train.map((l) => [l.step, l.failed_episodes, l['gateway/history_rewrites']])).toStrictEqual([
          [1, 0, 0],
          [2, 0, 0],
        ]);
        expect(train.some((l) => Number(l.trained_sequences ?? 0) > 0)).toBe(true);
      },
      600_000,
    );
  },
);
