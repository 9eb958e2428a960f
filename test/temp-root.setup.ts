/**
 * A setup file for every test file: $TMPDIR is the run's temporary root (see temp-root.global.ts), so
 * `os.tmpdir()` here and in every child process names a folder the run removes at its end.
 */
import { inject } from 'vitest';

process.env.TMPDIR = inject('tempRoot');
