import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../../util/paths.js';
import { slotUid } from './capabilities.js';
import { SandboxPool, sandboxCapabilities, type SandboxLimits } from './index.js';
import { processesOfUid } from './processes.js';

// Hostile programs against the real sandbox. .ci/run installs bubblewrap, so these run isolated;
// the first test fails loudly where namespaces are unavailable instead of skipping.
const pool = new SandboxPool({ size: 2 });
const short: Partial<SandboxLimits> = {
  cpuMs: 1_000,
  wallMs: 2_000,
  memoryMb: 512,
  processes: 8,
  outputBytes: 64 * 1024,
};

/** Pids of live processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) found.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return found;
}

describe('sandbox (hostile code)', () => {
  test('returns namespaces available on this machine', async () => {
    const caps = await sandboxCapabilities();
    expect(caps.namespaces, caps.detail).toBe(true);
  });

  test('returns timeout for an infinite loop, by the CPU limit', async () => {
    const result = await pool.run({ code: 'while True:\n    pass\n', limits: { ...short, wallMs: 5_000 } });
    expect(result.status).toBe('timeout');
    expect(result.signal).toBe('SIGXCPU');
    expect(result.wallMs).toBeLessThan(4_000);
  });

  test('returns timeout for a fork bomb held to the process limit, leaving no process behind', async () => {
    const marker = `atk-forkbomb-${randomUUID()}`;
    const code = [
      'import os, sys, time',
      'forked = 0',
      'for _ in range(200):',
      '    try:',
      '        if os.fork() == 0:',
      `            os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(60)', '${marker}'])`,
      '        forked += 1',
      '    except OSError:',
      '        pass',
      'print(forked, flush=True)',
      'while True:',
      '    try:',
      '        os.fork()',
      '    except OSError:',
      '        time.sleep(0.01)',
    ].join('\n');
    const result = await pool.run({ code, limits: short });
    expect(result.status).toBe('timeout');
    expect(Number(result.stdout.trim())).toBeGreaterThan(0);
    expect(Number(result.stdout.trim())).toBeLessThan(8);
    expect(processesWith(marker)).toStrictEqual([]);
  });

  test('returns memory for allocating 10 GB, at once or piecewise', async () => {
    const once = await pool.run({ code: 'x = bytearray(10 * 1024 ** 3)\n', limits: short });
    // Touching pages is slow on a loaded machine: a small limit is reached long before the CPU limit.
    const piecewise = await pool.run({
      code: 'chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 ** 2))\n',
      limits: { ...short, memoryMb: 128, cpuMs: 3_000, wallMs: 5_000 },
    });
    expect([once.status, piecewise.status]).toStrictEqual(['memory', 'memory']);
    expect(once.stderr).toContain('MemoryError');
  });

  test('returns output_limit for printing 200 MB and keeps only the allowed bytes', async () => {
    const code = 'import sys\nchunk = "x" * 65536\nfor _ in range(3200):\n    sys.stdout.write(chunk)\n';
    const result = await pool.run({ code, limits: short });
    expect(result.status).toBe('output_limit');
    expect(result.stdout.length).toBe(64 * 1024);
  });

  test('returns blocked for reading /etc/passwd, the home directory, the project and the shared data', async () => {
    const targets = [
      '/etc/passwd',
      '/etc/shadow',
      join(homedir(), '.bashrc'),
      homedir(),
      join(projectRoot(), 'package.json'),
      projectRoot(),
      '/work/shared',
    ];
    const code = [
      'import os, json, sys',
      `for path in json.loads(${JSON.stringify(JSON.stringify(targets))}):`,
      '    try:',
      '        os.listdir(path) if os.path.isdir(path) else open(path).read()',
      '        print("READ", path)',
      '    except OSError:',
      '        print("blocked")',
      'print(sorted(os.environ))',
    ].join('\n');
    const result = await pool.run({ code, limits: short });
    expect(result.status).toBe('ok');
    const lines = result.stdout.trim().split('\n');
    expect(lines.slice(0, -1)).toStrictEqual(targets.map(() => 'blocked'));
    expect(lines.at(-1)).toBe(
      "['HOME', 'LANG', 'MKL_NUM_THREADS', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'PATH', 'PWD', 'PYTHONIOENCODING']",
    );
  });

  test('returns blocked for writing outside its working directory, and the host sees no file', async () => {
    const name = `atk-hostile-${randomUUID()}`;
    const outside = ['/usr/' + name, join(projectRoot(), name), '/sandbox/main.py', '/etc/' + name];
    const code = [
      'import json',
      `for path in json.loads(${JSON.stringify(JSON.stringify(outside))}) + ['/tmp/${name}', '/work/${name}']:`,
      '    try:',
      '        open(path, "w").write("pwned")',
      '        print("wrote")',
      '    except OSError:',
      '        print("blocked")',
    ].join('\n');
    const result = await pool.run({ code, limits: short });
    expect(result.stdout.trim().split('\n')).toStrictEqual([
      'blocked',
      'blocked',
      'blocked',
      'blocked',
      'wrote',
      'wrote',
    ]);
    for (const path of [...outside, `/tmp/${name}`, `/work/${name}`]) expect(existsSync(path), path).toBe(false);
  });

  describe('with a TCP server on 127.0.0.1', () => {
    let server: Server;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    test('returns no connection for a TCP connect to the local port', async () => {
      const port = (server.address() as { port: number }).port;
      const code = [
        'import socket',
        'try:',
        `    socket.create_connection(("127.0.0.1", ${port}), timeout=1)`,
        '    print("connected")',
        'except OSError as e:',
        '    print("failed")',
      ].join('\n');
      const result = await pool.run({ code, limits: short });
      expect(result.stdout).toBe('failed\n');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(connections).toBe(0);
    });
  });

  test('returns timeout for sleeping past the wall limit', async () => {
    const result = await pool.run({ code: 'import time\ntime.sleep(60)\n', limits: { ...short, wallMs: 1_000 } });
    expect(result.status).toBe('timeout');
    expect(result.wallMs).toBeLessThan(2_000);
  });

  describe('with a bystander process on the host', () => {
    let bystander: ChildProcess;
    beforeAll(() => {
      bystander = spawn('/bin/sleep', ['120'], { stdio: 'ignore' });
    });
    afterAll(() => {
      bystander.kill('SIGKILL');
    });

    test('returns ok for killing its parent (the namespace init ignores it), and the host processes live on', async () => {
      const code = 'import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(0.2)\nprint("alive")\n';
      const result = await pool.run({ code, limits: short });
      expect(result).toMatchObject({ status: 'ok', stdout: 'alive\n' });
      expect(bystander.exitCode).toBe(null);
      const after = await pool.run({ code: 'print(6 * 7)\n', limits: short });
      expect(after.stdout).toBe('42\n');
    });

    test('returns ok for kill(-1), which reaches nothing outside the sandbox', async () => {
      const code =
        'import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n    print("nothing to kill")\n';
      const result = await pool.run({ code, limits: short });
      expect(result).toMatchObject({ status: 'ok', stdout: 'nothing to kill\n' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(bystander.exitCode).toBe(null);
      expect(bystander.signalCode).toBe(null);
    });
  });

  test('returns ok for a program that leaves a background child, and the child is gone', async () => {
    const marker = `atk-orphan-${randomUUID()}`;
    const code = [
      'import subprocess',
      `subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(60)', '${marker}'], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)`,
      'print("spawned")',
    ].join('\n');
    const result = await pool.run({ code, limits: short });
    expect(result).toMatchObject({ status: 'ok', stdout: 'spawned\n' });
    expect(processesWith(marker)).toStrictEqual([]);
  });

  test('returns no process (zombies included) left under any slot uid', async () => {
    const uids = [0, 1].map((slot) => slotUid(pool.slotIds[slot])).filter((uid) => uid !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(uids.flatMap((uid) => processesOfUid(uid))).toStrictEqual([]);
  });
});
