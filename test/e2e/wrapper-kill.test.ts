/**
 * Under Node < 22 `bin/atk` is a wrapper that re-runs atk under the bundled Node 22. A SIGKILL of the
 * wrapper (the pid the user started) must not leave the real atk training and holding the run's lock:
 * it ends as on SIGTERM, and the run is interrupted and resumable.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, describe, expect, test } from 'vitest';
import { alive } from '../../src/__fixtures__/engine-processes.js';
import { projectRoot } from '../../src/util/paths.js';
import { BIN, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

/** A Node older than 22, under which bin/atk re-runs itself: the system's. */
const OLD_NODE = process.env.ATK_OLD_NODE ?? '/usr/bin/node';
const oldMajor = Number(spawnSync(OLD_NODE, ['-p', 'process.versions.node.split(".")[0]']).stdout?.toString() ?? 0);

const runs = tempRunsDir();
afterAll(() => rmSync(runs, { recursive: true, force: true }));

describe('bin/atk under an older Node', () => {
  test.skipIf(!(oldMajor > 0 && oldMajor < 22))(
    'returns an interrupted, resumable run when the wrapper is SIGKILLed while it trains',
    async () => {
      const args = ['recipes/smoke/quickstart.yaml', 'train.steps=1000', 'train.eval_before=false'];
      const wrapper = execa(OLD_NODE, [BIN, 'run', ...args, `output.runs_dir=${runs}`], {
        reject: false,
        cwd: projectRoot(),
        stdio: 'ignore',
        env: { CI: 'true' },
      });
      const dir = join(runs, 'smoke-quickstart', 'v001');
      // Training is under way once the first step's rollouts have started; the manifest names the real atk.
      const atk = await until(() => {
        const started = readJsonl(join(dir, 'logs', 'collect.jsonl')).length > 0;
        return started ? (readJson(join(dir, 'manifest.json')).pid as number) : undefined;
      }, 120_000);
      expect(atk).not.toBe(wrapper.pid);
      wrapper.kill('SIGKILL');
      await wrapper;
      try {
        expect(await until(() => (alive(atk) ? undefined : true), 10_000)).toBe(true);
      } finally {
        // Should it outlive its wrapper, it must not train on after the test.
        if (alive(atk)) process.kill(atk, 'SIGTERM');
        await until(() => (alive(atk) ? undefined : true), 30_000);
      }
      expect([readJson(join(dir, 'manifest.json')).status, existsSync(join(dir, 'writer.lock'))]).toStrictEqual([
        'interrupted',
        false,
      ]);

      const resumed = await execa(OLD_NODE, [BIN, 'run', '--resume', dir, 'train.steps=1', 'train.eval_after=false'], {
        reject: false,
        cwd: projectRoot(),
        env: { CI: 'true' },
      });
      expect([resumed.exitCode, resumed.stderr, readJson(join(dir, 'manifest.json')).status]).toStrictEqual([
        0,
        '',
        'finished',
      ]);
    },
    240_000,
  );
});

/** Polls `probe` every 50 ms until it returns a value; throws after `ms`. */
async function until<T>(probe: () => T | undefined, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    let value: T | undefined;
    try {
      value = probe();
    } catch {
      // a file being written or not there yet
    }
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${ms} ms`);
    await sleep(50);
  }
}
