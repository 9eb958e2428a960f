// Runs the trainer tests that compare the built-in model and the LoRA export with transformers and peft
// (they skip under Debian's torch 1.13, which recent transformers does not support). The first run makes a
// venv with trainer/requirements-transformers.txt (torch from PyPI with its CUDA libraries, about 5.5 GB);
// later runs reuse it until the requirements change. Extra arguments go to pytest.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const REQUIREMENTS = 'trainer/requirements-transformers.txt';
const TESTS = [
  'trainer/tests/test_transformers_equality.py',
  'trainer/tests/test_merged_export.py',
  'trainer/tests/test_qwen2.py',
];
const cache = process.env.XDG_CACHE_HOME?.startsWith('/') ? process.env.XDG_CACHE_HOME : join(homedir(), '.cache');
const venv = process.env.ATK_TRANSFORMERS_VENV ?? join(cache, 'atk', 'venv-transformers');
const python = join(venv, 'bin', 'python');
const stamp = join(venv, 'atk-requirements.txt');
const wanted = readFileSync(REQUIREMENTS, 'utf8');

if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== wanted) {
  console.log(`test:transformers: installing ${REQUIREMENTS} into ${venv} (about 5.5 GB the first time)`);
  run('python3', ['-m', 'venv', venv]);
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS]);
  writeFileSync(stamp, wanted);
}
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

function run(command, args, env = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.status !== 0) {
    console.error(`test:transformers: ${command} ${args.join(' ')} failed (exit ${result.status})`);
    process.exit(result.status ?? 1);
  }
}
