// Sandboxed test executions per second, and the sandbox's overhead relative to a plain subprocess.
// Each execution is one competitive-programming test: a short Python program reading stdin.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { SandboxPool, sandboxCapabilities } from '../src/tools/sandbox/index.js';

const CODE = 'import sys\nprint(sum(map(int, sys.stdin.read().split())))\n';
const STDIN = '1 2 3 4 5\n';
const RUNS = 40;

/** Mean wall ms of `RUNS` sequential executions of `run`, after two warm-up runs. */
async function meanMs(run: () => Promise<void>): Promise<number> {
  await run();
  await run();
  const start = performance.now();
  for (let i = 0; i < RUNS; i++) await run();
  return (performance.now() - start) / RUNS;
}

function plainPython(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-I', '-B', '-c', CODE], { stdio: ['pipe', 'ignore', 'ignore'] });
    child.on('error', reject);
    child.on('exit', () => resolve());
    child.stdin.end(STDIN);
  });
}

const caps = await sandboxCapabilities();
const sequential = new SandboxPool({ size: 1 });
const plain = await meanMs(plainPython);
const sandboxed = await meanMs(async () => {
  const result = await sequential.run({ code: CODE, stdin: STDIN });
  if (result.stdout !== '15\n') throw new Error(`unexpected result: ${JSON.stringify(result)}`);
});

const cores = availableParallelism();
const parallel = new SandboxPool({ size: cores });
const batch = RUNS * 2;
const start = performance.now();
await Promise.all(Array.from({ length: batch }, () => parallel.run({ code: CODE, stdin: STDIN })));
const perSecond = batch / ((performance.now() - start) / 1000);

console.log(`isolation: ${caps.namespaces ? 'bwrap (namespaces + rlimits)' : 'rlimits only'}; ${caps.detail}`);
console.log(`plain python subprocess: ${plain.toFixed(1)} ms per run`);
console.log(
  `sandboxed run (1 slot):  ${sandboxed.toFixed(1)} ms per run; overhead ${(sandboxed / plain).toFixed(2)}x a plain subprocess`,
);
console.log(`sandboxed test executions/s with a pool of ${cores} (one per core): ${perSecond.toFixed(1)}`);
