import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { StepScalars } from './scalars.js';
import { fileVersionEvent, scalarEvent, tfRecord } from './tfrecord.js';

/**
 * Appends TensorBoard event files under `dir` (a run's `tb/`): one file per writer, named as
 * TensorBoard's own writers name them, one Event per scalar. Each record is written whole with
 * one write call, so a killed run leaves at most one torn record at the end, which readers skip.
 */
export class TensorBoardWriter {
  readonly path: string;
  private fd: number | undefined;

  constructor(dir: string, now: number = Date.now() / 1000) {
    mkdirSync(dir, { recursive: true });
    this.path = join(dir, `events.out.tfevents.${Math.floor(now)}.${hostname()}.${process.pid}.atk`);
    this.fd = openSync(this.path, 'a');
    writeSync(this.fd, tfRecord(fileVersionEvent(now)));
  }

  /** Write each value of one step as its own scalar Event. */
  write(scalars: StepScalars): void {
    if (this.fd === undefined) return;
    const records = scalars.values.map(([tag, value]) =>
      tfRecord(scalarEvent(scalars.wallTime, scalars.step, tag, value)),
    );
    if (records.length > 0) writeSync(this.fd, Buffer.concat(records));
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
