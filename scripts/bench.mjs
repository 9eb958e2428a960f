// Runs every benchmark in bench/ and prints its figures. Timing never fails the run: figures are
// information, compared by a person, not thresholds.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const only = process.argv.slice(2);
const files = readdirSync('bench')
  .filter((f) => /\.(ts|mjs|js|py)$/.test(f))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
let crashed = 0;
for (const file of files) {
  console.log(`\n== bench/${file}`);
  const [cmd, args] = file.endsWith('.py')
    ? [process.env.ATK_PYTHON ?? '/usr/bin/python3', [`bench/${file}`]]
    : ['npx', ['tsx', `bench/${file}`]];
  const result = spawnSync(cmd, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    crashed++;
    console.log(`bench/${file} crashed (exit ${result.status})`);
  }
}
process.exit(crashed ? 1 : 0);
