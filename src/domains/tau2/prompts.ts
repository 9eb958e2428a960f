import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from '../../errors/index.js';
import type { Tau2Domain } from './db.js';
import type { Tau2Task } from './tasks.js';

/** The reference agent's instruction block, verbatim. */
export const AGENT_INSTRUCTION = `You are a customer service agent that helps the user according to the <policy> provided below.
In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time.

Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.`;

/** The agent's fixed opening message; the user simulator answers it with the first user turn. */
export const AGENT_GREETING = 'Hi! How can I help you today?';

/** The agent's system prompt: instructions and the domain policy, framed as the reference frames them. */
export function agentSystemPrompt(policy: string): string {
  return `<instructions>\n${AGENT_INSTRUCTION}\n</instructions>\n<policy>\n${policy}\n</policy>`;
}

/** The user simulator's system prompt: the simulation guidelines and the task's scenario. */
export function userSystemPrompt(guidelines: string, task: Pick<Tau2Task, 'user_scenario'>): string {
  return `${guidelines}\n\n<scenario>\n${scenarioText(task.user_scenario)}\n</scenario>`;
}

/** `str(UserScenario)` of the reference: optional persona, then the (structured) instructions. */
export function scenarioText(scenario: Tau2Task['user_scenario']): string {
  const lines: string[] = [];
  if (scenario.persona != null) lines.push('Persona:', indent(scenario.persona, '\t'));
  lines.push('Instructions:', indent(instructionsText(scenario.instructions), '\t'));
  return lines.join('\n');
}

function instructionsText(instructions: Tau2Task['user_scenario']['instructions']): string {
  if (typeof instructions === 'string') return instructions;
  const lines = [`Domain: ${instructions.domain}`, `Reason for call:\n${indent(instructions.reason_for_call, '\t')}`];
  if (instructions.known_info != null) lines.push(`Known info:\n${indent(instructions.known_info, '\t')}`);
  if (instructions.unknown_info != null) lines.push(`Unknown info:\n${indent(instructions.unknown_info, '\t')}`);
  lines.push(`Task instructions:\n${indent(instructions.task_instructions, '\t')}`);
  return lines.join('\n');
}

/** Python's `textwrap.indent`: prefix every line that is not whitespace only. */
export function indent(text: string, prefix: string): string {
  return text
    .split(/(?<=\n)/)
    .map((line) => (line.trim() === '' ? line : prefix + line))
    .join('');
}

/**
 * Read a domain's policy.md.
 * @throws InputError when it is missing.
 */
export async function loadPolicy(dataDir: string, domain: Tau2Domain): Promise<string> {
  return readText(join(dataDir, 'tau2', 'domains', domain, 'policy.md'));
}

/**
 * Read the user simulator guidelines (the variant for users with tools when `withTools`).
 * @throws InputError when the file is missing.
 */
export async function loadUserGuidelines(dataDir: string, withTools = false): Promise<string> {
  return readText(
    join(dataDir, 'tau2', 'user_simulator', withTools ? 'simulation_guidelines_tools.md' : 'simulation_guidelines.md'),
  );
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read ${path}`, { hint: 'set ATK_DATA_DIR to the folder holding tau2/', cause: error });
  }
}
