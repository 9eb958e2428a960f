import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LOW_LOGPROB, recordRun } from '../__fixtures__/recorded-run.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { InputError } from '../errors/index.js';
import { loadModelTokenizer, TokenTrajectory, type TrajectoryJSON } from '../tokens/index.js';
import { stripAnsi } from '../ui/ansi.js';
import { runInspectTrajectory } from './inspect-trajectory.js';

let root: string;
let run: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-inspect-'));
  run = await recordRun(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

const stepFile = (step: number): string => join(run, 'trajectories', `step-0000${step}.jsonl`);

async function lines(file: string): Promise<Record<string, unknown>[]> {
  return (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('runInspectTrajectory', () => {
  test('returns one line per episode of the newest step when no episode is chosen', async () => {
    const out = await runInspectTrajectory({ path: run });
    const rows = out.trim().split('\n');
    expect(rows[0]).toBe(`${stepFile(1)}: 8 episodes`);
    expect(rows.slice(1, 9).map((r) => r.split(/\s+/).at(-1))).toStrictEqual([
      'add-1',
      'add-1',
      'mul-1',
      'mul-1',
      'sub-1',
      'sub-1',
      'bad-tool',
      'bad-tool',
    ]);
    expect(rows[3]).toMatch(/^2 {2}no +reward +0\.0 +turns +2 +tools +1 +err +0 +endTurn +mul-1$/);
  });

  test('returns the worst episode as a readable conversation with its reward parts and stats', async () => {
    const out = await runInspectTrajectory({ path: run, step: 0, worst: true });
    const text = out.split('\n');
    expect(text[0]).toBe('episode 2 of 8  step 0  task mul-1  group 1 sample 0  policy v0');
    expect(text[1]).toBe('reward 0.0 (correct 0.0, formatted 1.0)  no success  advantage -0.500');
    expect(text[2]).toBe('finish endTurn  turns 2  tool calls 1  tool errors 0');
    expect(text).toContain('reward info {"extracted":"54","expected":"56","source":"answer"}');
    const conversation = text.slice(text.indexOf('── system ──'));
    expect(conversation.slice(0, 12)).toStrictEqual([
      '── system ──',
      'Use the calculator, then write Answer and the number.',
      '── user ──',
      'What is 7*8?',
      '── assistant ──',
      'Let me compute.',
      '→ calculator({"expression":"7*8"})',
      '── tool calculator ──',
      '← calculator:',
      '56',
      '── assistant ──',
      'Answer: 54',
    ]);
  });

  test('returns the best episode and the first failed one, naming the other failures', async () => {
    expect((await runInspectTrajectory({ path: run, best: true })).split('\n')[0]).toMatch(
      /^episode 0 of 8 .* task add-1 /,
    );
    const failed = (await runInspectTrajectory({ path: run, failed: true })).split('\n');
    expect(failed[0]).toMatch(/^episode 2 of 8 /);
    expect(failed).toContain('4 episodes did not succeed: 2, 3, 6, 7');
  });

  test('returns tool errors by kind and the error result the model read', async () => {
    const out = (await runInspectTrajectory({ path: run, episode: 6 })).split('\n');
    expect(out[2]).toBe('finish endTurn  turns 2  tool calls 1  tool errors 1 (unknown_tool 1)');
    expect(out).toContain('← abacus error:');
    expect(out).toContain("Error: unknown tool 'abacus'; available tools: calculator");
  });

  test('returns the token view with segment boundaries, masks and low-probability tokens flagged', async () => {
    const record = (await lines(stepFile(1)))[2]!;
    const trajectory = TokenTrajectory.fromJSON(record.trajectory);
    const out = (await runInspectTrajectory({ path: run, episode: 2, tokens: true })).split('\n');
    const headers = out.filter((l) => l.startsWith('┌─ '));
    expect(headers.map((h) => h.split(' · ')[0])).toStrictEqual(trajectory.segments.map((s) => `┌─ ${s.source}`));
    expect(out).toContain(
      `${trajectory.length} tokens: ${trajectory.modelLogprobs.length} model (mask 1), ${trajectory.length - trajectory.modelLogprobs.length} environment (mask 0)`,
    );
    // One row per model token; the answer's digits are the only ones below p = 0.1.
    const rows = out.filter((l) => /^ +\d+ [! ] +\d+ {2}1 /.test(l));
    expect(rows).toHaveLength(trajectory.modelLogprobs.length);
    const flagged = rows.filter((r) => r.includes(' ! '));
    expect(flagged.map((r) => JSON.parse(r.slice(r.indexOf('"'))) as string)).toStrictEqual(['5', '4']);
    expect(flagged[0]).toContain(LOW_LOGPROB.toFixed(4));
    expect(headers.at(-1)).toContain('2 with p<0.1');
  });

  test('returns coloured inline tokens on a terminal, low-probability ones on a red background', async () => {
    const out = await runInspectTrajectory({ path: run, episode: 2, tokens: true, color: true });
    expect(out).toMatch(/\u001b\[41m\u001b\[1m(\u001b\[4m)?5/);
    expect(out).toMatch(/\u001b\[41m\u001b\[1m(\u001b\[4m)?4/);
    const plain = stripAnsi(out);
    expect(plain).toContain('Answer: 54<|im_end|>');
    expect(plain).toContain('<tool_response>⏎\n56⏎\n</tool_response>');
  });

  test('returns the atk view command that opens the same episode or file', async () => {
    const episode = (await runInspectTrajectory({ path: run, step: 0, episode: 2, tokens: true }))
      .trimEnd()
      .split('\n');
    expect(episode.at(-1)).toBe(
      `in the browser: atk view ${run} --open --at 'episode?run=fixture/v001&source=step-00000&index=2&tokens=1'`,
    );
    const listing = (await runInspectTrajectory({ path: run, eval: 'step-00000' })).trimEnd().split('\n');
    expect(listing.at(-1)).toBe(
      `in the browser: atk view ${run} --open --at 'episodes?run=fixture/v001&source=eval/step-00000'`,
    );
  });

  test('returns no drift for the recorded episodes and the planted drift of a non-canonical split', async () => {
    expect(await runInspectTrajectory({ path: run, episode: 0, drift: true })).toContain(
      'drift: none: re-rendering the conversation gives the same',
    );
    // Split one merged model token into its bytes, as a sampler may: the same text, other tokens.
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const record = (await lines(stepFile(0)))[0]!;
    const json = record.trajectory as TrajectoryJSON;
    const t = TokenTrajectory.fromJSON(json);
    const model = t.segments.find((s) => s.source === 'model')!;
    const at = t.ids.findIndex(
      (id, i) => i >= model.start && i < model.start + model.length && tok.decode([id]).length === 2,
    );
    const bytes = [...tok.decode([t.ids[at]!])].map((c) => tok.tokenToId(c)!);
    const ids = [...json.ids.slice(0, at), ...bytes, ...json.ids.slice(at + 1)];
    const lpAt = at - model.start;
    const segments = json.segments.map((s) =>
      s === json.segments[1] ? ([s[0], s[1] + 1, s[2], s[3], s[4]] as const) : s,
    );
    const logprobs = [...json.logprobs.slice(0, lpAt), -0.1, -0.1, ...json.logprobs.slice(lpAt + 1)];
    const planted = join(run, 'trajectories', 'planted.jsonl');
    await writeFile(planted, `${JSON.stringify({ ...record, trajectory: { ...json, ids, segments, logprobs } })}\n`);
    const out = (await runInspectTrajectory({ path: planted, drift: true })).split('\n');
    expect(out).toContain(
      'drift: 1 place(s) where a re-render differs; 2 model token(s) a text pipeline would train on wrongly',
    );
    expect(out.find((l) => l.startsWith('  hunk 1: '))).toBe(
      `  hunk 1: tokens ${at}..${at + 2} (2 model) vs re-rendered ${at}..${at + 1}`,
    );
  });

  test('returns JSON with the record, every token and the drift report for scripts', async () => {
    const out = JSON.parse(
      await runInspectTrajectory({ path: run, step: 1, episode: 3, tokens: true, drift: true, json: true }),
    ) as Record<string, unknown>;
    const record = (await lines(stepFile(1)))[3]!;
    const { trajectory, ...rest } = record;
    expect(out.record).toStrictEqual(rest);
    expect([out.file, out.index, out.matches]).toStrictEqual([stepFile(1), 3, [3]]);
    const tokens = out.tokens as { id: number; mask: number; logprob: number | null }[];
    expect(tokens.map((t) => t.id)).toStrictEqual((trajectory as TrajectoryJSON).ids);
    expect(tokens.filter((t) => t.mask === 1).map((t) => t.logprob)).toStrictEqual(
      (trajectory as TrajectoryJSON).logprobs,
    );
    expect((out.drift as { identical: boolean }).identical).toBe(true);
    const listing = JSON.parse(await runInspectTrajectory({ path: run, json: true })) as {
      episodes: { index: number; task_id: string }[];
    };
    expect(listing.episodes.map((e) => [e.index, e.task_id])).toStrictEqual([
      [0, 'add-1'],
      [1, 'add-1'],
      [2, 'mul-1'],
      [3, 'mul-1'],
      [4, 'sub-1'],
      [5, 'sub-1'],
      [6, 'bad-tool'],
      [7, 'bad-tool'],
    ]);
  });

  test('returns eval results from an eval directory, by --eval label, and a copied file with --model', async () => {
    const evalDir = join(run, 'eval', 'step-00000');
    expect((await runInspectTrajectory({ path: evalDir })).split('\n')[0]).toBe(
      `${join(evalDir, 'results.jsonl')}: 8 episodes`,
    );
    expect((await runInspectTrajectory({ path: run, eval: 'step-00000', worst: true })).split('\n')[0]).toMatch(
      /^episode 2 of 8 +step 0 +task mul-1/,
    );
    const loose = join(root, 'loose.jsonl');
    await writeFile(loose, await readFile(join(evalDir, 'results.jsonl')));
    await expect(runInspectTrajectory({ path: loose, episode: 0, tokens: true })).rejects.toThrow(
      /is not inside a run directory/,
    );
    expect(await runInspectTrajectory({ path: loose, episode: 0, tokens: true, model: TINY_TOKENIZER_DIR })).toContain(
      '┌─ model · turn 0',
    );
  });

  test('returns failed episodes with their failed/<kind> in the listing, its JSON and the episode header', async () => {
    const records = await lines(stepFile(1));
    const failed = (i: number, kind: string): Record<string, unknown> => ({
      ...records[i],
      success: false,
      failed: true,
      error: `${kind} broke`,
      error_kind: kind,
    });
    const file = join(root, 'failures.jsonl');
    const edited = [failed(0, 'engine'), failed(1, 'tool'), failed(2, 'engine'), ...records.slice(3)];
    await writeFile(file, `${edited.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const listing = (await runInspectTrajectory({ path: file })).split('\n');
    expect(listing[0]).toBe(`${file}: 8 episodes  failed/engine 2  failed/tool 1`);
    expect(listing.slice(1, 5).map((r) => r.split(/\s+/).slice(-2).join(' '))).toStrictEqual([
      'add-1 failed/engine',
      'add-1 failed/tool',
      'mul-1 failed/engine',
      'endTurn mul-1',
    ]);
    const json = JSON.parse(await runInspectTrajectory({ path: file, json: true })) as {
      failures: unknown;
      episodes: { error_kind?: string }[];
    };
    expect([json.failures, json.episodes[1]!.error_kind]).toStrictEqual([
      { 'failed/engine': 2, 'failed/tool': 1 },
      'tool',
    ]);
    expect((await runInspectTrajectory({ path: file, failed: true })).split('\n')).toContain(
      'error (failed/engine): engine broke',
    );
  });

  test('rejects unknown steps, evals and episodes, and lines that are not trajectories, with what exists', async () => {
    await expect(runInspectTrajectory({ path: run, step: 7 })).rejects.toMatchObject({
      message: `${run}: no trajectories for step 7`,
      hint: 'steps recorded: 0, 1',
    });
    await expect(runInspectTrajectory({ path: run, eval: 'step-00099' })).rejects.toMatchObject({
      hint: 'evals recorded: step-00000, step-00040',
    });
    await expect(runInspectTrajectory({ path: run, episode: 8 })).rejects.toThrow(
      `--episode 8: ${stepFile(1)} has episodes 0..7`,
    );
    const bad = join(root, 'bad.jsonl');
    await writeFile(bad, '{"step": 0}\n');
    const error = await runInspectTrajectory({ path: bad }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toBe(
      `${bad}:1: not a trajectory record (group: Invalid input: expected number, received undefined)`,
    );
  });
});
