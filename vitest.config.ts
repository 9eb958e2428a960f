import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Tests spawn real subprocesses (trainer, sandbox); two cores cannot run many files at once.
    maxWorkers: 2,
  },
});
