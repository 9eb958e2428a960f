import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { recordRun } from '../__fixtures__/recorded-run.js';
import { InputError } from '../errors/index.js';
import { startViewServer, type ViewServer } from './server.js';

let root: string;
let runDir: string;
let server: ViewServer;
const RUN = 'fixture/v001';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-view-'));
  runDir = await recordRun(root, { metricSteps: 12 });
  server = await startViewServer({ paths: [join(root, 'runs')], pollMs: 200 });
});
afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

async function get<T>(path: string): Promise<T> {
  const res = await fetch(new URL(path, server.url));
  expect(res.status, `${path}: ${res.status}`).toBe(200);
  return (await res.json()) as T;
}

describe('startViewServer', () => {
  test('returns the runs table row of a recorded run', async () => {
    const { runs } = await get<{ runs: Record<string, unknown>[] }>('/api/runs');
    expect(
      runs.map((r) => [
        r.id,
        r.status,
        r.stepsDone,
        r.stepsTotal,
        r.evalBefore,
        (r.evalAfter as { label: string }).label,
      ]),
    ).toStrictEqual([[RUN, 'finished', 12, 40, { label: 'step-00000', accuracy: 0.5 }, 'step-00012']]);
  });

  test('returns training metrics as aligned columns and evals as lines', async () => {
    const metrics = await get<{
      train: { steps: number[]; series: Record<string, (number | null)[]> };
      evals: { label: string }[];
    }>(`/api/metrics?run=${RUN}`);
    const lines = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.kind !== 'eval');
    expect(metrics.train.steps).toStrictEqual(lines.map((l) => l.step));
    expect(metrics.train.series.reward_mean).toStrictEqual(lines.map((l) => l.reward_mean));
    expect(metrics.evals.map((e) => e.label)).toStrictEqual(['step-00000', 'step-00012']);
  });

  test('returns the episode files of the run: training steps, then evals with results', async () => {
    const { sources } = await get<{ sources: unknown[] }>(`/api/sources?run=${RUN}`);
    expect(sources).toStrictEqual([
      { id: 'step-00000', kind: 'train', step: 0 },
      { id: 'step-00001', kind: 'train', step: 1 },
      { id: 'eval/step-00000', kind: 'eval', step: 0 },
    ]);
  });

  test('returns episodes filtered, sorted and paged on the server', async () => {
    type Page = {
      total: number;
      matched: number;
      offset: number;
      episodes: { index: number; taskId: string; reward: number; success: boolean; toolErrors: number }[];
    };
    const all = await get<Page>(`/api/episodes?run=${RUN}&source=step-00001`);
    expect([all.total, all.matched, all.episodes.map((e) => e.taskId)]).toStrictEqual([
      8,
      8,
      ['add-1', 'add-1', 'mul-1', 'mul-1', 'sub-1', 'sub-1', 'bad-tool', 'bad-tool'],
    ]);
    // mul-1 is answered wrong and bad-tool calls a tool the agent does not have.
    const failed = await get<Page>(`/api/episodes?run=${RUN}&source=step-00001&only=failed`);
    expect(failed.episodes.map((e) => [e.index, e.taskId, e.success])).toStrictEqual([
      [2, 'mul-1', false],
      [3, 'mul-1', false],
      [6, 'bad-tool', false],
      [7, 'bad-tool', false],
    ]);
    const toolErrors = await get<Page>(`/api/episodes?run=${RUN}&source=step-00001&only=toolError`);
    expect(toolErrors.episodes.map((e) => e.taskId)).toStrictEqual(['bad-tool', 'bad-tool']);
    const page = await get<Page>(`/api/episodes?run=${RUN}&source=step-00001&sort=taskId&desc=1&offset=2&limit=3`);
    // Descending by task id (ties by index): sub-1 4 5, mul-1 2 3, bad-tool 6 7, add-1 0 1; the page from 2 holds 3.
    expect([page.matched, page.offset, page.episodes.map((e) => [e.index, e.taskId])]).toStrictEqual([
      8,
      2,
      [
        [2, 'mul-1'],
        [3, 'mul-1'],
        [6, 'bad-tool'],
      ],
    ]);
    const above = await get<Page>(`/api/episodes?run=${RUN}&source=step-00001&above=0.5&task=add-1`);
    expect(above.episodes.map((e) => [e.index, e.reward])).toStrictEqual([
      [0, 1],
      [1, 1],
    ]);
  });

  test('returns episodes whose conversation holds a text, not matching token ids', async () => {
    const hits = await get<{ episodes: { taskId: string }[] }>(`/api/episodes?run=${RUN}&source=step-00001&q=ABACUS`);
    expect(hits.episodes.map((e) => e.taskId)).toStrictEqual(['bad-tool', 'bad-tool']);
    const none = await get<{ matched: number }>(`/api/episodes?run=${RUN}&source=step-00001&q=353`);
    expect(none.matched).toBe(0);
  });

  test('returns one episode with its conversation, and its tokens with the drift audit', async () => {
    const episode = await get<{
      record: Record<string, unknown>;
      turns: { role: string; parts: { kind: string; name?: string }[] }[];
    }>(`/api/episode?run=${RUN}&source=step-00001&index=6`);
    expect([episode.record.task_id, 'trajectory' in episode.record]).toStrictEqual(['bad-tool', false]);
    expect(episode.turns.flatMap((t) => t.parts.filter((p) => p.kind === 'toolCall').map((p) => p.name))).toStrictEqual(
      ['abacus'],
    );
    const line = JSON.parse(
      (await readFile(join(runDir, 'trajectories', 'step-00001.jsonl'), 'utf8')).split('\n')[2]!,
    ) as { trajectory: { ids: number[]; logprobs: number[] } };
    const tokens = await get<{
      length: number;
      tokens: [number, string, number, number | null][];
      drift: { report: { identical: boolean } };
    }>(`/api/tokens?run=${RUN}&source=step-00001&index=2`);
    expect(tokens.tokens.map((t) => t[0])).toStrictEqual(line.trajectory.ids);
    expect(tokens.tokens.filter((t) => t[2] === 1).map((t) => t[3])).toStrictEqual(
      line.trajectory.logprobs.map((l) => Math.round(l * 1e5) / 1e5),
    );
    expect(tokens.drift.report.identical).toBe(true);
  });

  test('returns one task in every step and eval, and tool use with unknown tools in one row', async () => {
    const task = await get<{ episodes: { source: string; index: number }[] }>(`/api/task?run=${RUN}&task=mul-1`);
    expect(task.episodes.map((e) => [e.source, e.index])).toStrictEqual([
      ['step-00000', 2],
      ['step-00000', 3],
      ['step-00001', 2],
      ['step-00001', 3],
      ['eval/step-00000', 2],
      ['eval/step-00000', 3],
    ]);
    const tools = await get<{ tools: { name: string }[]; unknownTools: Record<string, unknown> }>(
      `/api/tools?run=${RUN}&source=step-00001`,
    );
    expect(tools.tools.map((t) => t.name)).toStrictEqual(['calculator']);
    expect(tools.unknownTools).toStrictEqual({
      name: 'tools the agent does not have',
      calls: 2,
      episodeShare: 0.25,
      errors: 2,
      names: 1,
      examples: [{ name: 'abacus', calls: 2 }],
    });
  });

  test('returns 404 with a message for an unknown run, source or episode', async () => {
    for (const path of [
      '/api/metrics?run=nope',
      `/api/episodes?run=${RUN}&source=step-00009`,
      `/api/episode?run=${RUN}&source=step-00001&index=99`,
    ]) {
      const res = await fetch(new URL(path, server.url));
      expect([res.status, typeof ((await res.json()) as { error: unknown }).error]).toStrictEqual([404, 'string']);
    }
  });

  test('returns the page shell for any other path, and uPlot from node_modules', async () => {
    const page = await (await fetch(new URL('/anything', server.url))).text();
    expect(page).toContain('<script type="module" src="/app/main.js"></script>');
    const uplot = await fetch(new URL('/vendor/uplot.js', server.url));
    expect([uplot.status, (await uplot.text()).includes('export { uPlot as default }')]).toStrictEqual([200, true]);
    expect((await fetch(new URL('/app/../../package.json', server.url))).headers.get('content-type')).toContain(
      'text/html',
    );
  });

  test('returns gzipped answers to a client that accepts them', async () => {
    const { headers, bytes } = await new Promise<{ headers: Record<string, unknown>; bytes: number }>(
      (resolve, reject) => {
        const req = request(
          new URL(`/api/metrics?run=${RUN}`, server.url),
          { headers: { 'accept-encoding': 'gzip' } },
          (res) => {
            let bytes = 0;
            res.on('data', (chunk: Buffer) => (bytes += chunk.length));
            res.on('end', () => resolve({ headers: res.headers, bytes }));
          },
        );
        req.on('error', reject);
        req.end();
      },
    );
    expect(headers['content-encoding']).toBe('gzip');
    expect(bytes).toBe(Number(headers['content-length']));
  });

  test('sends a server-sent event when a run grows, and serves the new step', async () => {
    const controller = new AbortController();
    const res = await fetch(new URL('/api/events', server.url), { signal: controller.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const events: string[] = [];
    const step2 = (await readFile(join(runDir, 'trajectories', 'step-00001.jsonl'), 'utf8')).replaceAll(
      '"step":1,',
      '"step":2,',
    );
    await writeFile(join(runDir, 'trajectories', 'step-00002.jsonl'), step2);
    await appendFile(
      join(runDir, 'metrics.jsonl'),
      `${JSON.stringify({ kind: 'train', step: 13, reward_mean: 0.9 })}\n`,
    );
    const deadline = Date.now() + 30_000;
    while (!events.some((e) => e.includes(RUN)) && Date.now() < deadline)
      events.push(decoder.decode((await reader.read()).value));
    controller.abort();
    expect(events.join('')).toContain(`event: runs\ndata: {"changed":["${RUN}"]}`);
    // The two writes may reach the watcher as one change or two: wait (bounded) for the second.
    let runs: { stepsDone: number; lastReward: number }[] = [];
    for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      ({ runs } = await get<{ runs: { stepsDone: number; lastReward: number }[] }>('/api/runs'));
      if (runs[0]!.stepsDone === 13) break;
    }
    expect([runs[0]!.stepsDone, runs[0]!.lastReward]).toStrictEqual([13, 0.9]);
    const page = await get<{ total: number }>(`/api/episodes?run=${RUN}&source=step-00002`);
    expect(page.total).toBe(8);
  });

  test('rejects a request whose Host is not loopback (DNS rebinding)', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(new URL('/api/runs', server.url), { headers: { host: 'evil.example:80' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });

  test('rejects a host off loopback without a token, and requests without the token when one is set', async () => {
    await expect(startViewServer({ paths: [join(root, 'runs')], host: '0.0.0.0' })).rejects.toThrow(InputError);
    const guarded = await startViewServer({ paths: [join(root, 'runs')], token: 's3cret' });
    try {
      const base = guarded.url.replace(/\?token=.*$/, '');
      expect((await fetch(new URL('/api/runs', base))).status).toBe(403);
      expect((await fetch(new URL('/api/runs?token=wrong', base))).status).toBe(403);
      expect((await fetch(new URL('/api/runs', base), { headers: { authorization: 'Bearer s3cret' } })).status).toBe(
        200,
      );
      const first = await fetch(guarded.url);
      const cookie = first.headers.get('set-cookie')!.split(';')[0]!;
      expect((await fetch(new URL('/api/runs', base), { headers: { cookie } })).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});
