// Runs every fuzz test (src/**/*.fuzz.test.ts) long: `npm run fuzz [runs] [seed]`. The seed is
// random unless given and is printed first, so a failure found here replays with the same seed.
// `npm test` runs the same files with a fixed seed and a few runs.
import { spawnSync } from 'node:child_process';

const runs = Number(process.argv[2] ?? 500);
const seed = Number(process.argv[3] ?? Math.floor(Math.random() * 2 ** 31));
if (!Number.isInteger(runs) || runs <= 0 || !Number.isInteger(seed)) {
  console.error('usage: npm run fuzz [runs] [seed]   (runs > 0, seed an integer)');
  process.exit(2);
}
console.log(`fuzz: ${runs} runs per property, seed ${seed} (replay: npm run fuzz ${runs} ${seed})`);
const result = spawnSync('npx', ['vitest', 'run', '--testTimeout', '0', 'fuzz.test'], {
  stdio: 'inherit',
  env: { ...process.env, ATK_FUZZ_RUNS: String(runs), ATK_FUZZ_SEED: String(seed) },
});
process.exit(result.status ?? 1);
