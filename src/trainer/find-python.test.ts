import { afterEach, describe, expect, test, vi } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { venvDir } from '../util/paths.js';
import { findPython, findTorchPython, pythonCandidates } from './find-python.js';

describe('pythonCandidates', () => {
  afterEach(() => vi.unstubAllEnvs());

  test("returns $ATK_PYTHON, then the recipe python, then atk's venv, then the system's Pythons, each once", () => {
    const venv = join(venvDir(), 'bin', 'python');
    vi.stubEnv('ATK_PYTHON', '/opt/py/bin/python');
    expect(pythonCandidates('/srv/venv/bin/python')).toStrictEqual([
      '/opt/py/bin/python',
      '/srv/venv/bin/python',
      venv,
      'python3',
      '/usr/bin/python3',
      'python',
    ]);
    vi.stubEnv('ATK_PYTHON', '');
    expect(pythonCandidates('/usr/bin/python3')).toStrictEqual(['/usr/bin/python3', venv, 'python3', 'python']);
  });
});

describe('findPython', () => {
  afterEach(() => vi.unstubAllEnvs());

  test('returns the first candidate that imports torch, with why each earlier one was passed over', async () => {
    vi.stubEnv('ATK_PYTHON', '/nonexistent/atk-python');
    const { info, tried } = await findPython('/usr/bin/python3'); // Debian's python3-torch, as the README installs it
    expect(tried).toStrictEqual(['/nonexistent/atk-python: not found']);
    expect(info?.python).toBe('/usr/bin/python3');
    expect(info?.torchVersion).toMatch(/^\d+\.\d+/);
    expect([typeof info?.cuda, typeof info?.gpuCount]).toStrictEqual(['boolean', 'number']);
  });

  test('returns $ATK_PYTHON ahead of the recipe python', async () => {
    vi.stubEnv('ATK_PYTHON', '/usr/bin/python3');
    const { info, tried } = await findPython('/nonexistent/recipe-python');
    expect([info?.python, tried]).toStrictEqual(['/usr/bin/python3', []]);
  });

  test('returns a Python found earlier in the process without probing again, and probes again when PYTHONPATH changes', async () => {
    vi.stubEnv('ATK_PYTHON', '/nonexistent/memo-python');
    const first = await findPython('/usr/bin/python3');
    const again = await findPython('/usr/bin/python3');
    expect([first.tried, again.tried, again.info]).toStrictEqual([
      ['/nonexistent/memo-python: not found'],
      [],
      first.info,
    ]);
    vi.stubEnv('PYTHONPATH', '/nonexistent/other-site');
    expect((await findPython('/usr/bin/python3')).tried).toStrictEqual(['/nonexistent/memo-python: not found']);
  });
});

describe('findTorchPython', () => {
  afterEach(() => vi.unstubAllEnvs());

  test('returns the first candidate with torch installed, with why each earlier one was passed over', async () => {
    // A real Python that cannot see torch: Debian's, without its site directories (-S).
    const noTorch = join(mkdtempSync(join(tmpdir(), 'atk-python-')), 'python-without-site');
    writeFileSync(noTorch, '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n');
    chmodSync(noTorch, 0o755);
    vi.stubEnv('ATK_PYTHON', '/nonexistent/atk-python');
    const { python, tried } = await findTorchPython(noTorch);
    expect(tried.slice(0, 2)).toStrictEqual(['/nonexistent/atk-python: not found', `${noTorch}: no torch installed`]);
    expect(['python3', '/usr/bin/python3']).toContain(python); // python3 is /usr/bin/python3 unless another comes first
    expect(await findPython(python!)).toMatchObject({ info: { python } }); // and that one really imports torch
  });

  test("returns atk's venv ahead of the system's Pythons, so a CUDA torch of atk setup --gpu wins", async () => {
    // atk's venv, as venvDir() finds it under $XDG_CACHE_HOME, whose python is Debian's (with torch).
    const cache = mkdtempSync(join(tmpdir(), 'atk-cache-'));
    vi.stubEnv('XDG_CACHE_HOME', cache);
    vi.stubEnv('ATK_PYTHON', '');
    const python = join(venvDir(), 'bin', 'python');
    mkdirSync(dirname(python), { recursive: true });
    symlinkSync('/usr/bin/python3', python);
    expect(await findTorchPython()).toStrictEqual({ python, tried: [] });
    rmSync(cache, { recursive: true });
  });

  test('returns the Python it found earlier in the process without probing again, and probes again when PYTHONPATH changes', async () => {
    vi.stubEnv('ATK_PYTHON', '/nonexistent/torch-memo-python');
    const first = await findTorchPython('/usr/bin/python3');
    const again = await findTorchPython('/usr/bin/python3');
    expect([first.tried, again]).toStrictEqual([
      ['/nonexistent/torch-memo-python: not found'],
      { python: first.python, tried: [] },
    ]);
    vi.stubEnv('PYTHONPATH', '/nonexistent/other-site');
    expect((await findTorchPython('/usr/bin/python3')).tried).toStrictEqual([
      '/nonexistent/torch-memo-python: not found',
    ]);
  });
});
