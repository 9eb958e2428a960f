import { describe, expect, test } from 'vitest';
import { bareDebianRoot } from '../__fixtures__/machine-facts.js';
import { InputError } from '../errors/index.js';
import type { SetupCommand } from '../setup/plan.js';
import { gpuRequirementsFile } from '../setup/gpu-plan.js';
import { venvDir } from '../util/paths.js';
import { runSetup } from './setup.js';

const facts = bareDebianRoot;
const APT = [
  'apt-get update',
  'env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch libopenblas0-pthread bubblewrap python3-venv',
];

function harness(over: { yes?: boolean; dryRun?: boolean; interactive?: boolean; answer?: boolean } = {}) {
  const printed: string[] = [];
  const ran: SetupCommand[] = [];
  const asked: string[] = [];
  const options = {
    dryRun: over.dryRun ?? false,
    yes: over.yes ?? false,
    dev: false,
    interactive: over.interactive ?? false,
    facts,
    print: (line: string) => printed.push(line),
    run: async (command: SetupCommand) => void ran.push(command),
    ask: async (question: string) => {
      asked.push(question);
      return over.answer ?? false;
    },
  };
  return { options, printed, ran, asked };
}

describe('runSetup', () => {
  test('returns the commands after printing each one, running nothing, with dryRun', async () => {
    const h = harness({ dryRun: true });
    await runSetup(h.options);
    expect([h.printed, h.ran]).toStrictEqual([
      ['atk setup would run (Debian packages through apt):', ...APT.map((c) => `  ${c}`)],
      [],
    ]);
  });

  test('rejects installing without yes when no one can answer, and runs nothing', async () => {
    const h = harness();
    const error = await runSetup(h.options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(
      'atk setup installs nothing without --yes when no one can answer (CI, a pipe)',
    );
    expect([h.ran, h.asked]).toStrictEqual([[], []]);
  });

  test('returns after asking once on a terminal, running nothing when declined and everything when accepted', async () => {
    const declined = harness({ interactive: true, answer: false });
    await expect(runSetup(declined.options)).rejects.toThrow('declined');
    expect([declined.asked, declined.ran]).toStrictEqual([['Run these commands? [y/N] '], []]);
    const accepted = harness({ interactive: true, answer: true });
    await runSetup(accepted.options);
    expect(accepted.ran.map((c) => c.join(' '))).toStrictEqual(APT);
  });

  test('returns after running every command with yes, each printed before it runs', async () => {
    const h = harness({ yes: true });
    await runSetup(h.options);
    expect(h.ran.map((c) => c.join(' '))).toStrictEqual(APT);
    expect(h.printed.filter((l) => l.startsWith('$ '))).toStrictEqual(APT.map((c) => `$ ${c}`));
    expect(h.printed.at(-1)).toBe('atk setup: done; atk doctor checks the result');
  });

  test('returns the GPU plan with gpu: apt for the sandbox, then a CUDA torch into the venv', async () => {
    const h = harness({ dryRun: true });
    const commands = await runSetup({
      ...h.options,
      gpu: true,
      gpuFacts: {
        ...facts,
        venvTorch: null,
        venvStamps: { gpu: null, dev: null },
        python3Version: '3.11.2',
        platform: 'linux-x64',
      },
    });
    expect(h.printed[0]).toBe(
      "atk setup would run (a CUDA build of torch from PyPI into atk's venv, which the trainer prefers):",
    );
    expect(commands.map((c) => c.slice(0, 3).join(' '))).toStrictEqual([
      'apt-get update',
      'env DEBIAN_FRONTEND=noninteractive apt-get',
      'python3 -m venv',
      `${venvDir()}/bin/pip install -r`,
      `cp ${gpuRequirementsFile()} ${venvDir()}/atk-requirements-gpu.txt`,
    ]);
    expect(commands.at(-2)?.at(-1)).toBe(gpuRequirementsFile());
  });
});
