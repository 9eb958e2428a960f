import { resolve } from 'node:path';
import { z } from 'zod';
import { parseComponentOptions } from '../util/component-options.js';
import { launch } from '../util/launcher.js';
import type { EpisodeOutcome, RewardDefinition, RewardFn, RewardResult } from './types.js';
import { userRewardResult } from './user-result.js';

const CommandRewardOptions = z.strictObject({
  command: z.array(z.string()).min(1),
  /** Absolute after recipe resolution: the directory of the recipe that names the command, unless set. */
  cwd: z.string().min(1).optional(),
  timeout_s: z.number().positive().default(30),
});

/** Most bytes of stdout read from a reward command; a score needs far fewer. */
const MAX_STDOUT = 1 << 20;

/**
 * Reward `command` (what `reward: {command: [python3, grade.py]}` becomes): runs the command in
 * `cwd` (the directory of the recipe that names it; the top recipe's when unset) once per episode, writes the episode as JSON to its stdin
 * (`{task, final_text, messages, tool_calls, finish_reason}`), and reads a number or JSON (a
 * number, or a record of named parts) from its stdout. A command that fails, times out or prints
 * something else makes the episode fail with the reason (reward 0, recorded in the trajectory).
 * @throws ConfigError on bad options.
 */
export const commandReward: RewardDefinition = {
  name: 'command',
  options: CommandRewardOptions,
  async create(options, ctx): Promise<RewardFn> {
    const { command, cwd, timeout_s } = parseComponentOptions(CommandRewardOptions, options, 'reward');
    return async (outcome) => {
      const stdout = await runCommand(
        command,
        resolve(ctx.recipeDir, cwd ?? '.'),
        JSON.stringify(episodeJson(outcome)),
        timeout_s * 1000,
        outcome.env?.signal,
      );
      return parseCommandOutput(stdout, command.join(' '));
    };
  },
};

/** The episode as a reward command reads it, in snake_case like every file atk writes. */
export function episodeJson(outcome: EpisodeOutcome): Record<string, unknown> {
  const { task } = outcome;
  return {
    task: {
      id: task.id,
      prompt: task.prompt,
      ...(task.answer === undefined ? {} : { answer: task.answer }),
      data: task.data,
    },
    final_text: outcome.finalText,
    messages: outcome.messages,
    tool_calls: outcome.toolCalls,
    finish_reason: outcome.finishReason,
  };
}

/**
 * A reward from a command's stdout: a bare number, or JSON (a number or a record of named parts).
 * @throws Error quoting the output when it is neither.
 */
export function parseCommandOutput(stdout: string, label: string): RewardResult {
  const text = stdout.trim();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`reward command '${label}' printed ${JSON.stringify(text.slice(0, 200))}; print a number or JSON`);
  }
  return userRewardResult(value, `reward command '${label}'`);
}

function runCommand(
  command: readonly string[],
  cwd: string,
  input: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<string> {
  const label = command.join(' ');
  return new Promise((resolve, reject) => {
    const child = launch(command[0]!, command.slice(1), { cwd });
    let stdout = '';
    let stderr = '';
    const stop = (why: string): void => {
      child.kill('SIGKILL');
      reject(new Error(`reward command '${label}' ${why}`));
    };
    const timer = setTimeout(() => stop(`timed out after ${timeoutMs / 1000} s`), timeoutMs);
    const onAbort = (): void => stop('was cancelled');
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < MAX_STDOUT) stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    const settle = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    child.on('error', (error) => {
      settle();
      reject(new Error(`reward command '${label}' could not run: ${error.message}`));
    });
    child.on('close', (code, killed) => {
      settle();
      if (code === 0) resolve(stdout);
      else
        reject(
          new Error(
            `reward command '${label}' exited with ${code ?? killed}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`,
          ),
        );
    });
    // A command that never reads stdin closes it early; that is not the command's failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}
