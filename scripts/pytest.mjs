// Runs the Python trainer's tests with a Python that can import torch (Debian's lives in /usr/bin).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync('trainer')) {
  console.log('pytest: no trainer/ package yet; nothing to run');
  process.exit(0);
}
const candidates = [process.env.ATK_PYTHON, 'python3', '/usr/bin/python3', 'python'].filter(Boolean);
const python = candidates.find(
  (p) => spawnSync(p, ['-c', 'import torch, pytest'], { stdio: 'ignore' }).status === 0,
);
if (!python) {
  console.error(`pytest: no Python among ${candidates.join(', ')} can import torch and pytest.`);
  console.error('hint: apt-get install python3-torch libopenblas0-pthread python3-pytest, or set ATK_PYTHON');
  process.exit(1);
}
const result = spawnSync(python, ['-m', 'pytest', 'trainer', '-q', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);
