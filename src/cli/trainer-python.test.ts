import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { runAtk } from '../__fixtures__/atk-process.js';
import { bareDebianRoot } from '../__fixtures__/machine-facts.js';
import { InputError } from '../errors/index.js';
import type { SetupCommand } from '../setup/plan.js';
import { projectRoot } from '../util/paths.js';
import { ensureTrainerPython } from './trainer-python.js';

/**
 * A Python environment without torch: a PYTHONPATH directory whose sitecustomize takes the site
 * directories (where pip and apt install torch) off sys.path, for every candidate interpreter
 * (python3, /usr/bin/python3, ...), so torch is not installed as far as they can tell.
 */
function withoutTorch(): { pythonPath: string; restoreTorch: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'atk-notorch-'));
  writeFileSync(
    join(dir, 'sitecustomize.py'),
    'import sys\nsys.path[:] = [p for p in sys.path if not p.endswith(("site-packages", "dist-packages"))]\n',
  );
  return { pythonPath: dir, restoreTorch: () => rmSync(join(dir, 'sitecustomize.py')) };
}

const facts = bareDebianRoot;

describe('ensureTrainerPython', () => {
  afterEach(() => vi.unstubAllEnvs());

  test('returns at once when a Python imports torch, asking nothing', async () => {
    const asked: string[] = [];
    await ensureTrainerPython(undefined, {
      interactive: true,
      ask: async (question) => {
        asked.push(question);
        return false;
      },
      print: () => {},
      askedMarker: join(mkdtempSync(join(tmpdir(), 'atk-asked-')), 'offered'),
    });
    expect(asked).toStrictEqual([]);
  });

  test('offers atk setup once on a terminal: prints its commands, asks, and a later run only names atk setup --yes', async () => {
    const { pythonPath } = withoutTorch();
    vi.stubEnv('PYTHONPATH', pythonPath);
    vi.stubEnv('ATK_PYTHON', '');
    const marker = join(mkdtempSync(join(tmpdir(), 'atk-asked-')), 'offered');
    const printed: string[] = [];
    const asked: string[] = [];
    const ran: SetupCommand[] = [];
    const options = {
      interactive: true,
      ask: async (question: string) => {
        asked.push(question);
        return false;
      },
      print: (line: string) => printed.push(line),
      setup: { facts, run: async (command: SetupCommand) => void ran.push(command) },
      askedMarker: marker,
    };
    const declined = await ensureTrainerPython(undefined, options).catch((e: unknown) => e);
    expect(declined).toBeInstanceOf(InputError);
    expect((declined as InputError).message).toContain('run `atk setup --yes`');
    expect(printed).toStrictEqual([
      'atk run: the trainer needs a Python that can import torch and none was found.',
      'atk setup runs (Debian packages through apt):',
      '  apt-get update',
      '  env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch libopenblas0-pthread bubblewrap python3-venv',
    ]);
    expect([asked, ran]).toStrictEqual([['Run these commands? [y/N] '], []]);

    const again = await ensureTrainerPython(undefined, options).catch((e: unknown) => e);
    expect((again as InputError).message).toBe(
      'the trainer needs a Python that can import torch and none was found; run `atk setup --yes` to install it (atk run installs nothing itself)',
    );
    expect(asked).toHaveLength(1);
  });

  test('returns once the accepted setup has made torch importable, having run each printed command', async () => {
    const { pythonPath, restoreTorch } = withoutTorch();
    vi.stubEnv('PYTHONPATH', pythonPath);
    vi.stubEnv('ATK_PYTHON', '');
    const ran: string[] = [];
    await ensureTrainerPython(undefined, {
      interactive: true,
      ask: async () => true,
      print: () => {},
      // the stand-in "installs" torch by lifting the shadow once the last command runs
      setup: {
        facts,
        run: async (command) => {
          ran.push(command.join(' '));
          if (command.includes('install')) restoreTorch();
        },
      },
      askedMarker: join(mkdtempSync(join(tmpdir(), 'atk-asked-')), 'offered'),
    });
    expect(ran).toHaveLength(2);
  });
});

describe('atk run without torch', () => {
  test('exits 2 in CI with one line naming atk setup --yes, before any run directory exists', async () => {
    const { pythonPath } = withoutTorch();
    const home = mkdtempSync(join(tmpdir(), 'atk-home-'));
    const runsDir = join(home, 'runs');
    mkdirSync(runsDir);
    const result = await runAtk(['run', 'recipes/quickstart.yaml', `output.runs_dir=${runsDir}`, '--no-tui'], {
      cwd: projectRoot(),
      env: { CI: 'true', PYTHONPATH: pythonPath, ATK_PYTHON: '', XDG_CACHE_HOME: join(home, 'cache') },
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr.split('\n').filter((l) => l.includes('atk setup --yes'))).toHaveLength(1);
    expect(result.stderr).toContain('none was found; run `atk setup --yes` to install it');
    expect(readdirSync(runsDir)).toStrictEqual([]);
    expect(existsSync(join(home, 'cache', 'atk'))).toBe(false);
  }, 180_000);
});
