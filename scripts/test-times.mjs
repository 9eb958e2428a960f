// Per-file times of vitest runs, from the JSON reporter's output (`npx vitest run --reporter=json
// --outputFile=FILE`), as a markdown table slowest first: one column per run, so a before and an after
// can be read side by side. Usage: node scripts/test-times.mjs RUN.json [RUN2.json ...] [--top N]
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : Number.POSITIVE_INFINITY;
if (args.length === 0) {
  console.error('usage: node scripts/test-times.mjs RUN.json [RUN2.json ...] [--top N]');
  process.exit(2);
}

/** Seconds per test file (relative to the run's root) of one JSON report, and the run's wall seconds. */
function fileTimes(path) {
  const report = JSON.parse(readFileSync(path, 'utf8'));
  const root = report.testResults.map((r) => r.name).reduce(commonDir);
  const times = new Map(report.testResults.map((r) => [relative(root, r.name), (r.endTime - r.startTime) / 1000]));
  const end = Math.max(...report.testResults.map((r) => r.endTime));
  return { times, wall: (end - report.startTime) / 1000, files: report.numTotalTestSuites };
}

function commonDir(a, b) {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return a.slice(0, a.lastIndexOf('/', i) + 1);
}

const runs = args.map(fileTimes);
const names = [...new Set(runs.flatMap((r) => [...r.times.keys()]))];
const key = (name) => Math.max(...runs.map((r) => r.times.get(name) ?? 0));
names.sort((a, b) => key(b) - key(a));
const cell = (s) => (s === undefined ? '-' : s.toFixed(1));
console.log(`| test file | ${args.map((a) => `${a} (s)`).join(' | ')} |`);
console.log(`| --- | ${args.map(() => '---:').join(' | ')} |`);
for (const name of names.slice(0, top))
  console.log(`| \`${name}\` | ${runs.map((r) => cell(r.times.get(name))).join(' | ')} |`);
const sum = (r) => [...r.times.values()].reduce((a, b) => a + b, 0);
console.log(`| all ${names.length} files, summed | ${runs.map((r) => cell(sum(r))).join(' | ')} |`);
console.log(`| wall (vitest start to last file's end) | ${runs.map((r) => cell(r.wall)).join(' | ')} |`);
