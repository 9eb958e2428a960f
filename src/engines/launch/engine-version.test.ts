import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { engineVersionCheck } from './engine-doctor.js';
import { compareVersions, installedEngineVersion, judgeEngineVersion } from './engine-version.js';

describe('judgeEngineVersion', () => {
  test('returns ok inside the range, too-old below it, newer above it, unknown without a version', () => {
    expect(
      ['0.10.2', '0.33.0', '0.10.1', '0.34.1', '0.11.0rc1'].map((v) => judgeEngineVersion('vllm', v).status),
    ).toStrictEqual(['ok', 'ok', 'too-old', 'newer', 'ok']);
    expect(judgeEngineVersion('sglang', '0.4.9').message).toBe(
      'sglang 0.4.9 is older than 0.5.0 (atk speaks the 0.5 /generate and weight-update API)',
    );
    expect(judgeEngineVersion('sglang', null).status).toBe('unknown');
  });

  test('returns numeric, not lexical, order from compareVersions', () => {
    expect([
      compareVersions('0.10.2', '0.9.9') > 0,
      compareVersions('v0.5.4', '0.5.4'),
      compareVersions('0.5', '0.5.1') < 0,
    ]).toStrictEqual([true, 0, true]);
  });
});

describe('installedEngineVersion', () => {
  const path = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path;
  });

  // A `vllm` executable that prints what `vllm --version` prints.
  function fakeVllm(output: string): void {
    const dir = mkdtempSync(join(tmpdir(), 'atk-vllm-'));
    writeFileSync(join(dir, 'vllm'), `#!/bin/sh\n[ "$1" = "--version" ] && echo "${output}"\n`);
    chmodSync(join(dir, 'vllm'), 0o755);
    process.env.PATH = `${dir}${delimiter}${path}`;
  }

  test('returns the version vllm --version prints, and the doctor row judging it', async () => {
    fakeVllm('INFO 10-21 12:00:00 [__init__.py:216] Automatically detected platform cuda.\n0.11.0');
    expect(await installedEngineVersion('vllm')).toBe('0.11.0');
    expect(await engineVersionCheck('vllm')).toStrictEqual({
      check: 'vllm',
      status: 'pass',
      detail: 'vllm 0.11.0 (atk supports 0.10.2 to 0.33.0)',
    });
  });

  test('returns a warning row for a version older than atk needs', async () => {
    fakeVllm('0.9.2');
    expect(await engineVersionCheck('vllm')).toStrictEqual({
      check: 'vllm',
      status: 'warn',
      detail:
        'vllm 0.9.2 is older than 0.10.2 (return_token_ids on /v1/completions and processed logprobs arrived in 0.10.2)',
      fix: 'atk setup --engine vllm',
    });
  });

  test('returns null and a not-installed warning when the engine is absent', async () => {
    expect(await installedEngineVersion('sglang', '/nonexistent/python3')).toBeNull();
    expect((await engineVersionCheck('sglang', '/nonexistent/python3')).detail).toBe('not installed');
  });
});
