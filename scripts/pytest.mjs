// Runs the Python trainer's tests with a Python that can import torch, found in the order the trainer's own
// launch looks (src/trainer/find-python.ts): $ATK_PYTHON, atk's venv (atk setup --gpu), then the system's
// (Debian's python3-torch lives in /usr/bin).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { atkCacheDir } from './venv.mjs';

if (!existsSync('trainer')) {
  console.log('pytest: no trainer/ package yet; nothing to run');
  process.exit(0);
}
const candidates = [
  process.env.ATK_PYTHON,
  join(atkCacheDir(), 'venv', 'bin', 'python'),
  await ggufPythonOrNone(),
  'python3',
  '/usr/bin/python3',
  'python',
].filter(Boolean);
const python = candidates.find((p) => spawnSync(p, ['-c', 'import torch, pytest'], { stdio: 'ignore' }).status === 0);
if (!python) {
  console.error(`pytest: no Python among ${candidates.join(', ')} can import torch and pytest.`);
  console.error('hint: atk setup --yes --dev (or --gpu --dev), or set ATK_PYTHON');
  process.exit(1);
}
// The Python checks first, over every Python file we ship or test with. flake8 is pyflakes (unused imports,
// undefined names, redefinitions) plus pycodestyle at 120 columns, with trainer/.flake8; the trainer is held
// to all of it and to black's format (trainer/pyproject.toml), bench/ and the fixtures to pyflakes' checks.
// black's style changes between its major versions, so only the one the tree is formatted with checks it.
const BLACK_MAJOR = '23.'; // Debian bookworm's black; `required-version` in trainer/pyproject.toml says the same
if (imports('flake8')) {
  check('flake8', ['flake8', '--config', 'trainer/.flake8', 'trainer']);
  check('flake8', ['flake8', '--select', 'F', 'bench', 'src/__fixtures__']);
} else {
  console.log('flake8: not installed, Python lint skipped (apt-get install flake8; atk setup --dev installs it)');
}
const black = spawnSync(python, ['-c', 'import black; print(black.__version__)'], { encoding: 'utf8' });
if (black.status === 0 && black.stdout.startsWith(BLACK_MAJOR)) {
  check('black', ['black', '--config', 'trainer/pyproject.toml', '--check', 'trainer']);
} else {
  const found = black.status === 0 ? `black ${black.stdout.trim()} is not ${BLACK_MAJOR}x` : 'black is not installed';
  console.log(`black: ${found}, format check skipped (apt-get install black; atk setup --dev installs it)`);
}
// One temporary root for the run, removed at its end, as test/temp-root.global.ts does for vitest: pytest's
// own tmp_path folders and what the processes the tests start write there (torchrun's torchelastic_* folders)
// follow $TMPDIR, so nothing is left in the host's temporary directory.
const root = mkdtempSync(join(tmpdir(), 'atk-py-'));
const result = spawnSync(python, ['-m', 'pytest', 'trainer', '-q', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: root },
});
rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
process.exit(result.status ?? 1);

/**
 * The GGUF importer's venv (the trainer's Python plus PyPI's gguf, made on first use as `atk model import`
 * makes it), so trainer/tests/test_gguf_import.py runs; none where it cannot be made (offline), and those
 * tests then skip with the reason. Needs the build (`npm test` builds first).
 */
async function ggufPythonOrNone() {
  if (process.env.ATK_PYTHON || !existsSync('dist/setup/gguf-python.js')) return undefined;
  const { ggufPython } = await import('../dist/setup/gguf-python.js');
  try {
    return await ggufPython({ print: (line) => console.log(`pytest: ${line}`) });
  } catch (error) {
    console.log(`pytest: without gguf (${error.message}); trainer/tests/test_gguf_import.py skips`);
    return undefined;
  }
}

function imports(module) {
  return spawnSync(python, ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0;
}

/** Runs `python -m <args>`; on a finding, says how to rerun it and exits with its status. */
function check(name, args) {
  const result = spawnSync(python, ['-m', ...args], { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`${name}: the Python files above need fixing (${python} -m ${args.join(' ')})`);
    process.exit(result.status ?? 1);
  }
}
