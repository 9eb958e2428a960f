/**
 * The data stream's state beside each checkpoint (`checkpoints/step-NNNNN/data-stream.json`): the cursor
 * and the curriculum after that step, so a resume draws on exactly where the interrupted run stood. It
 * is written before the checkpoint is committed, so a complete checkpoint always has it.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DataState } from '../rollout/data-stream.js';
import { writeJsonAtomic } from '../runs/index.js';

export const DATA_STATE_FILE = 'data-stream.json';

/** Writes `state` into the checkpoint directory `dir`. */
export async function writeDataState(dir: string, state: DataState): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeJsonAtomic(join(dir, DATA_STATE_FILE), state);
}

/**
 * The state saved in the checkpoint directory `dir`; undefined when it has none (a checkpoint of a run
 * that saved no state: its steps each read their fixed slice, so the step count places the cursor).
 */
export async function readDataState(dir: string): Promise<DataState | undefined> {
  // Encoding '' for 'utf8' is an equivalent mutant: readFile then returns a Buffer, which JSON.parse reads
  // as the same UTF-8 text.
  // Stryker disable next-line StringLiteral: equivalent, a Buffer parses as the same text
  const text = await readFile(join(dir, DATA_STATE_FILE), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const { position, curriculum } = JSON.parse(text) as Partial<DataState>;
  if (typeof position !== 'number' || typeof curriculum !== 'object' || curriculum === null)
    throw new Error(`${join(dir, DATA_STATE_FILE)} is not a data stream state`);
  return { position, curriculum };
}
