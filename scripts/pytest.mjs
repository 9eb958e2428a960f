// Runs the Python trainer's tests with a Python that can import torch (Debian's lives in /usr/bin).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync('trainer')) {
  console.log('pytest: no trainer/ package yet; nothing to run');
  process.exit(0);
}
const candidates = [process.env.ATK_PYTHON, 'python3', '/usr/bin/python3', 'python'].filter(Boolean);
const python = candidates.find((p) => spawnSync(p, ['-c', 'import torch, pytest'], { stdio: 'ignore' }).status === 0);
if (!python) {
  console.error(`pytest: no Python among ${candidates.join(', ')} can import torch and pytest.`);
  console.error('hint: apt-get install python3-torch libopenblas0-pthread python3-pytest, or set ATK_PYTHON');
  process.exit(1);
}
// The Python linter first: unused imports, undefined names, redefinitions, in every Python file we ship or test with.
const linted = ['trainer', 'bench', 'src/__fixtures__'];
if (spawnSync(python, ['-c', 'import pyflakes'], { stdio: 'ignore' }).status === 0) {
  const lint = spawnSync(python, ['-m', 'pyflakes', ...linted], { stdio: 'inherit' });
  if (lint.status !== 0) {
    console.error(`pyflakes: the Python files above need fixing (${python} -m pyflakes ${linted.join(' ')})`);
    process.exit(lint.status ?? 1);
  }
} else {
  console.log('pyflakes: not installed, Python lint skipped (apt-get install python3-pyflakes; .ci/run installs it)');
}
const result = spawnSync(python, ['-m', 'pytest', 'trainer', '-q', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);
