import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { alive } from '../__fixtures__/engine-processes.js';
import { launch, type LaunchedProcess } from './launcher.js';

const tsx = fileURLToPath(import.meta.resolve('tsx'));
const launcherModule = fileURLToPath(new URL('./launcher.ts', import.meta.url));

async function outcome(child: LaunchedProcess, streams = 3): Promise<{ out: string[]; code: number | null }> {
  const out = Array.from({ length: streams }, () => '');
  for (let fd = 1; fd < streams + 1; fd++)
    (child.stdio[fd] as NodeJS.ReadableStream | null)?.on('data', (chunk: Buffer) => void (out[fd - 1] += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return { out, code };
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (check()) return true;
  return check();
}

describe('process launcher', () => {
  it('runs a child with stdin, stdout, stderr, fd 3, cwd and env, and reports its exit', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'atk-launch-'));
    const child = launch(
      'sh',
      ['-c', 'read line; echo "out:$line:$PWD:$GREETING"; echo err >&2; echo report >&3; exit 7'],
      { cwd, env: { PATH: process.env.PATH, GREETING: 'hi' }, extraPipe: true },
    );
    child.stdin.end('ping\n');
    const { out, code } = await outcome(child);
    expect(code).toBe(7);
    expect(child.exitCode).toBe(7);
    expect(child.pid).toBeGreaterThan(0);
    expect(out).toEqual([`out:ping:${cwd}:hi\n`, 'err\n', 'report\n']);
  });

  it('reports a program that cannot start as an error, then close', async () => {
    const child = launch('/nonexistent/agent', []);
    const events: string[] = [];
    child.on('error', (error: NodeJS.ErrnoException) => events.push(`error ${error.code}`));
    await new Promise<void>((resolve) =>
      child.on('close', () => {
        events.push('close');
        resolve();
      }),
    );
    expect(events).toEqual(['error ENOENT', 'close']);
  });

  it("kills a detached child's whole group, grandchildren included", async () => {
    const child = launch('sh', ['-c', 'sleep 60 & echo $!; wait'], { detached: true });
    const [first] = (await once(child.stdout, 'data')) as [Buffer];
    const grandchild = Number(first.toString().trim());
    expect(alive(grandchild)).toBe(true);
    child.kill('SIGKILL', true);
    await once(child, 'close');
    expect(child.signalCode).toBe('SIGKILL');
    expect(await until(() => !alive(grandchild), 5_000)).toBe(true);
  });

  it('leaves the caller free of write faults that a fork of it would cause', async () => {
    // 50 MB of heap the caller writes after starting a child: after Node's spawn (a fork of the caller)
    // each page takes a write fault; after launch (a fork of the launcher) none does.
    const heap = Array.from({ length: 50 }, () => new Float64Array(((1024 * 1024) / 8) * 1).fill(1));
    const faultsOfWriting = (): number => {
      const before = process.resourceUsage().minorPageFault;
      for (const block of heap) for (let i = 0; i < block.length; i += 512) block[i]! += 1;
      return process.resourceUsage().minorPageFault - before;
    };
    await once(launch('true', []), 'close'); // the launcher itself is forked from the caller once
    faultsOfWriting();
    const viaLauncher = launch('sleep', ['1']);
    await once(viaLauncher, 'spawn');
    const launched = faultsOfWriting();
    const direct = spawn('sleep', ['1']);
    await once(direct, 'spawn');
    const forked = faultsOfWriting();
    viaLauncher.kill('SIGKILL');
    direct.kill('SIGKILL');
    expect(forked).toBeGreaterThanOrEqual(25); // one per 2 MB even where huge pages back the heap
    expect(launched).toBeLessThan(forked / 10);
  });

  it('kills the children of an atk that dies, and keeps no idle atk alive', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-launch-'));
    const script = join(dir, 'parent.mts');
    writeFileSync(
      script,
      [
        `import { launch } from ${JSON.stringify(launcherModule)};`,
        `import { once } from 'node:events';`,
        `await once(launch('true', []), 'close');`,
        `const child = launch('sleep', ['60'], { detached: true });`,
        `await once(child, 'spawn');`,
        `console.log(child.pid);`,
        `if (process.argv[2] === 'hang') setInterval(() => undefined, 1000);`,
        `else child.kill('SIGKILL', true);`,
      ].join('\n'),
    );
    // Idle: once its child is gone the parent exits by itself, the launcher with it.
    const quiet = spawn(process.execPath, ['--import', tsx, script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [code] = await Promise.race([once(quiet, 'exit'), sleep(20_000).then(() => ['still running'])]);
    expect(code).toBe(0);

    // Killed: its launcher notices and takes the child down.
    const hung = spawn(process.execPath, ['--import', tsx, script, 'hang'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(hung.stdout, 'data')) as [Buffer];
    const orphan = Number(line.toString().trim());
    expect(alive(orphan)).toBe(true);
    hung.kill('SIGKILL');
    expect(await until(() => !alive(orphan), 5_000)).toBe(true);
  }, 40_000);
});
