// A venv of its own for tests that need Python packages atk does not ship, made once and reused: it lives
// under ~/.cache/atk/<name> and holds a copy of the requirements it was made from, so it is made again only
// when the pins change. Used by scripts/test-transformers.mjs and scripts/test-agents.mjs.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The Python of venv `name` (`ATK_<NAME>_VENV` overrides where it is) with `requirements` installed;
 * installs them first when the venv is missing or was made from other pins. Returns `{ python }`, or
 * `{ skipped }` with the reason when `offlineSkips` and pip cannot reach the package index.
 */
export function ensureVenv({ name, requirements, note, offlineSkips = false }) {
  const override = process.env[`ATK_${name.replace(/^venv-/, '').toUpperCase()}_VENV`];
  const venv = override ?? join(atkCacheDir(), name);
  const python = join(venv, 'bin', 'python');
  const stamp = join(venv, 'atk-requirements.txt');
  const wanted = readFileSync(requirements, 'utf8');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return { python, venv };
  console.log(`installing ${requirements} into ${venv}${note ? ` (${note})` : ''}`);
  run('python3', ['-m', 'venv', venv]);
  const pip = spawnSync(
    python,
    ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', requirements],
    offlineSkips ? { encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] } : { stdio: 'inherit' },
  );
  if (pip.status !== 0) {
    const stderr = pip.stderr ?? '';
    if (offlineSkips) process.stderr.write(stderr);
    // A venv half-installed from other pins must not pass for a good one: the stamp is written only on success.
    if (
      offlineSkips &&
      /Could not find a version|NewConnectionError|Temporary failure in name resolution|Network is unreachable|ConnectTimeout|ProxyError/.test(
        stderr,
      )
    ) {
      rmSync(venv, { recursive: true, force: true });
      return { skipped: `the package index is not reachable (pip install -r ${requirements} failed to download)` };
    }
    fail(`${python} -m pip install -r ${requirements}`, pip.status);
  }
  writeFileSync(stamp, wanted);
  return { python, venv };
}

/** atk's cache folder, as src/util/paths.ts's venvDir finds it: $XDG_CACHE_HOME/atk, else ~/.cache/atk. */
export function atkCacheDir() {
  return join(
    process.env.XDG_CACHE_HOME?.startsWith('/') ? process.env.XDG_CACHE_HOME : join(homedir(), '.cache'),
    'atk',
  );
}

/** Runs `command`, inheriting stdio; exits with its status when it fails. */
export function run(command, args, env = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.status !== 0) fail(`${command} ${args.join(' ')}`, result.status);
}

function fail(what, status) {
  console.error(`${what} failed (exit ${status})`);
  process.exit(status ?? 1);
}
