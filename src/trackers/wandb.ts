import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { join } from 'node:path';
import { projectRoot, trainerPythonPath } from '../util/paths.js';
import type { StepScalars } from './scalars.js';
import type { Tracker } from './tracker.js';

/** What a W&B run is started with: the recipe's `output.wandb` and the resolved recipe as config. */
export interface WandbInit {
  readonly project: string;
  readonly entity?: string | undefined;
  readonly name: string;
  readonly tags: readonly string[];
  readonly config: unknown;
  /** Where the client keeps its files (`<run>/wandb`), what `wandb sync` reads offline. */
  readonly dir: string;
}

/** The Python interpreter with `wandb` ($ATK_WANDB_PYTHON, else $ATK_PYTHON, else python3) and the logger script. */
export function wandbLoggerCommand(env: NodeJS.ProcessEnv = process.env): [string, string] {
  return [
    env.ATK_WANDB_PYTHON ?? env.ATK_PYTHON ?? 'python3',
    join(projectRoot(), 'trainer', 'atk_trainer', 'wandb_logger.py'),
  ];
}

/**
 * A tracker that feeds W&B's own Python client (`trainer/atk_trainer/wandb_logger.py`) one JSON
 * line per call and waits for its answer, so a failure (package missing, no network, bad key)
 * surfaces as a rejected promise the tracker set turns into one warning. The logger finishes the
 * W&B run when its input ends, which is also what happens when atk exits without closing it.
 */
export async function startWandbTracker(
  init: WandbInit,
  command: readonly [string, ...string[]] = wandbLoggerCommand(),
): Promise<Tracker> {
  const [file, ...args] = command;
  const child = spawn(file, args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONPATH: trainerPythonPath() },
    detached: true,
  });
  const logger = new LineClient(child);
  await logger.send({ init });
  return {
    name: 'wandb',
    log: (scalars: StepScalars) => logger.send({ log: Object.fromEntries(scalars.values), step: scalars.step }),
    close: () => logger.close(),
  };
}

/** One request line out, one answer line back, in order. */
class LineClient {
  private readonly answers: Array<(answer: { ok?: boolean; error?: string }) => void> = [];
  private failure: Error | undefined;
  private readonly exited: Promise<void>;
  private stderr = '';

  constructor(private readonly child: ChildProcessByStdio<Writable, Readable, Readable>) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      let answer: { ok?: boolean; error?: string };
      try {
        answer = JSON.parse(line) as { ok?: boolean; error?: string };
      } catch {
        return; // the client's own chatter on stdout
      }
      if (answer.ok !== undefined || answer.error !== undefined) this.answers.shift()?.(answer);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-2000);
    });
    child.stdin.on('error', () => undefined);
    this.exited = new Promise((resolve) => {
      const fail = (message: string): void => {
        this.failure ??= new Error(message);
        for (const answer of this.answers.splice(0)) answer({ error: this.failure.message });
        resolve();
      };
      child.on('error', (error) => fail(`cannot start ${child.spawnfile}: ${error.message}`));
      child.on('close', (code) =>
        fail(
          `the wandb logger exited (code ${code})${this.stderr.trim() ? `: ${this.stderr.trim().split('\n').at(-1)}` : ''}`,
        ),
      );
    });
    // Neither the child nor its pipes keep atk alive; when atk exits, the logger reads EOF and finishes.
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr] as unknown as Array<{ unref?: () => void }>)
      stream.unref?.();
  }

  async send(message: object): Promise<void> {
    if (this.failure) throw this.failure;
    const answer = await new Promise<{ ok?: boolean; error?: string }>((resolve) => {
      this.answers.push(resolve);
      this.child.stdin.write(`${JSON.stringify(message)}\n`);
    });
    if (answer.error !== undefined) throw new Error(answer.error);
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }
}
