// Runs every benchmark in bench/ and prints its figures. Timing never fails the run: figures are
// information, compared by a person, not thresholds.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const only = process.argv.slice(2);
const stem = (f) => f.replace(/\.(ts|mjs|js|py)$/, '');
const all = readdirSync('bench')
  .filter((f) => /\.(ts|mjs|js|py)$/.test(f))
  .sort();
// A name picks its bench exactly (`gpu` is bench/gpu.py, not gpu-run too), else every bench containing it.
// Without a name every bench runs once: gpu-all is left out, it only reruns gpu and gpu-run.
const files =
  only.length === 0
    ? all.filter((f) => stem(f) !== 'gpu-all')
    : all.filter((f) => only.some((o) => stem(f) === o || (!all.some((g) => stem(g) === o) && f.includes(o))));
let crashed = 0;
for (const file of files) {
  console.log(`\n== bench/${file}`);
  const [cmd, args] = file.endsWith('.py')
    ? [process.env.ATK_PYTHON ?? '/usr/bin/python3', [`bench/${file}`]]
    : ['npx', ['tsx', `bench/${file}`]];
  // A benchmark can tell a run of every benchmark (ATK_BENCH_ALL=1) from one asked for by name, and keep itself short.
  const env = { ...process.env, ATK_BENCH_ALL: only.length === 0 ? '1' : '' };
  const result = spawnSync(cmd, args, { stdio: 'inherit', env });
  if (result.status !== 0) {
    crashed++;
    console.log(`bench/${file} crashed (exit ${result.status})`);
  }
}
process.exit(crashed ? 1 : 0);
