import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { execa } from 'execa';
import { atkCliCommand } from '../__fixtures__/engine-processes.js';
import { recordRun } from '../__fixtures__/recorded-run.js';
import { InputError } from '../errors/index.js';
import { runView, viewHint, viewUrl } from './view.js';

let root: string;
let runDir: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-view-cli-'));
  runDir = await recordRun(root, { metricSteps: 3 });
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('runView', () => {
  test('returns a server whose URL opens at the view asked for, serving the run given alone', async () => {
    const server = await runView({ paths: [runDir] });
    try {
      expect(viewUrl(server, 'episodes?run=fixture/v001&only=failed')).toMatch(
        /^http:\/\/127\.0\.0\.1:\d+\/#\/episodes\?run=fixture\/v001&only=failed$/,
      );
      expect(server.catalog.list().map((r) => r.id)).toStrictEqual(['fixture/v001']);
    } finally {
      await server.close();
    }
  });

  test('rejects a host off loopback without a token, and a path that does not exist', async () => {
    await expect(runView({ paths: [runDir], host: '0.0.0.0' })).rejects.toMatchObject({
      message: 'refusing to serve runs on 0.0.0.0 without a token',
    });
    await expect(runView({ paths: [join(root, 'nowhere')] })).rejects.toThrow(InputError);
  });
});

describe('viewHint', () => {
  test('returns the atk view command that opens a run at a view', async () => {
    expect(viewHint(runDir, 'curves?runs={run}')).toBe(
      `in the browser: atk view ${runDir} --open --at 'curves?runs=fixture/v001'`,
    );
  });

  test('returns the hint as atk report prints it, after the file it wrote', async () => {
    const [node, ...args] = atkCliCommand();
    const { stdout } = await execa(node!, [...args, 'report', runDir], { cwd: root });
    expect(stdout.split('\n')).toStrictEqual([
      `report written to ${join(runDir, 'report.html')}`,
      `in the browser: atk view runs/fixture/v001 --open --at 'curves?runs=fixture/v001'`,
    ]);
  });
});
