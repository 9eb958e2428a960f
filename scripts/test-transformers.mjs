// Runs the trainer tests that compare the built-in model and the LoRA export with transformers and peft
// (they skip under Debian's torch 1.13, which recent transformers does not support). The first run makes a
// venv with trainer/requirements-transformers.txt (torch from PyPI with its CUDA libraries, about 5.5 GB);
// later runs reuse it until the requirements change. Extra arguments go to pytest.
import { spawnSync } from 'node:child_process';
import { ensureVenv, run } from './venv.mjs';

const TESTS = [
  'trainer/tests/test_transformers_equality.py',
  'trainer/tests/test_merged_export.py',
  'trainer/tests/test_decoder.py',
];
const { python } = ensureVenv({
  name: 'venv-transformers',
  requirements: 'trainer/requirements-transformers.txt',
  note: 'about 5.5 GB the first time',
});
const versions = spawnSync(
  python,
  ['-c', 'import torch, transformers, peft; print(torch.__version__, transformers.__version__, peft.__version__)'],
  { encoding: 'utf8' },
);
console.log(`test:transformers: torch, transformers, peft = ${versions.stdout.trim()}`);
// -rs lists every skip with its reason: here nothing should skip for want of transformers.
run(python, ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', ...TESTS, ...process.argv.slice(2)], {
  PYTHONPATH: 'trainer',
});
