import { describe, expect, test } from 'vitest';
import { bareDebianRoot } from '../__fixtures__/machine-facts.js';
import { InputError } from '../errors/index.js';
import type { SetupCommand } from '../setup/plan.js';
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
});
