import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { SandboxPool, sandboxCapabilities } from './index.js';
import { parseReport } from './run.js';

const pool = new SandboxPool({ size: 2 });

describe('SandboxPool', () => {
  test('returns stdout, exit code and cpu time of a program reading stdin', async () => {
    const result = await pool.run({
      code: 'import sys\nprint(sum(map(int, sys.stdin.read().split())))\n',
      stdin: '1 2 3\n',
    });
    expect(result).toMatchObject({
      status: 'ok',
      exitCode: 0,
      signal: null,
      stdout: '6\n',
      stderr: '',
      isolation: 'bwrap',
    });
    expect(result.cpuMs).toBeGreaterThanOrEqual(0);
  });

  test('returns runtime_error with the exit code and the traceback', async () => {
    const result = await pool.run({ code: 'import sys\nprint("partial")\nraise ValueError("bad input")\n' });
    expect(result).toMatchObject({ status: 'runtime_error', exitCode: 1, stdout: 'partial\n' });
    expect(result.stderr).toContain('ValueError: bad input');
  });

  test('returns the extra files beside the program, read-only', async () => {
    const code =
      'import os\nprint(open("/sandbox/data.txt").read())\ntry:\n    open("/sandbox/data.txt", "w")\nexcept OSError:\n    print("read-only")\n';
    const result = await pool.run({ code, files: { 'data.txt': 'hello' } });
    expect(result.stdout).toBe('hello\nread-only\n');
  });

  test('returns programs one after another when the pool has one slot', async () => {
    const single = new SandboxPool({ size: 1 });
    const code = 'import time\nstart = time.time()\ntime.sleep(0.3)\nprint(start, time.time())\n';
    const spans = (await Promise.all([single.run({ code }), single.run({ code })])).map((r) =>
      r.stdout.trim().split(' ').map(Number),
    );
    const [first, second] = spans.sort((a, b) => a[0] - b[0]);
    expect(second[0]).toBeGreaterThanOrEqual(first[1]);
  });

  test('returns killed when the caller aborts', async () => {
    const controller = new AbortController();
    const running = pool.run({ code: 'import time\ntime.sleep(30)\n', signal: controller.signal });
    setTimeout(() => controller.abort(), 300);
    const result = await running;
    expect(result.status).toBe('killed');
    expect(result.wallMs).toBeLessThan(5_000);
  });
});

describe('SandboxPool without bwrap (rlimits fallback)', () => {
  const fallback = new SandboxPool({ size: 1, bwrap: '/nonexistent/bwrap' });

  test('returns results under rlimits and warns once, to every listener', async () => {
    const heard: string[] = [];
    fallback.onWarning((m) => heard.push(`a: ${m.slice(0, 16)}`));
    const first = await fallback.run({ code: 'print(1)\n' });
    await fallback.run({ code: 'print(2)\n' });
    fallback.onWarning((m) => heard.push(`b: ${m.slice(0, 16)}`));
    expect(first).toMatchObject({ status: 'ok', stdout: '1\n', isolation: 'rlimits' });
    expect(heard).toStrictEqual(['a: SANDBOX WARNING:', 'b: SANDBOX WARNING:']);
  });

  test('returns timeout and kills a child that left the process group (by uid, when root)', async () => {
    const marker = `atk-fallback-orphan-${randomUUID()}`;
    const code = [
      'import subprocess, time',
      `subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(60)', '${marker}'], start_new_session=True)`,
      'time.sleep(30)',
    ].join('\n');
    const result = await fallback.run({ code, limits: { wallMs: 1_000 } });
    expect(result.status).toBe('timeout');
    if (process.getuid?.() === 0) {
      const left = readdirSync('/proc').filter(
        (p) => /^\d+$/.test(p) && safeRead(`/proc/${p}/cmdline`).includes(marker),
      );
      expect(left).toStrictEqual([]);
    }
  });
});

describe('sandboxCapabilities', () => {
  test('returns no bwrap for a missing binary, with a hint', async () => {
    const caps = await sandboxCapabilities({ bwrap: '/nonexistent/bwrap' });
    expect(caps).toStrictEqual({
      bwrap: false,
      namespaces: false,
      detail: 'bwrap not found: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)',
    });
  });
});

describe('parseReport', () => {
  test('returns the exit status and the children cpu time from the shell report', () => {
    expect(parseReport('rc=3\n0m0.001s 0m0.002s\n0m1.250s 1m0.500s\n')).toStrictEqual({ rc: 3, cpuMs: 61_750 });
  });

  test('returns undefined for a missing report', () => {
    expect(parseReport('')).toBe(undefined);
  });
});

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
