/**
 * A setup file for every test file: those in test/e2e run the built CLI, so for them a dist/ older than
 * the sources fails the file before any test starts (see built-cli.ts). Other tests need no build.
 */
import { expect } from 'vitest';
import { assertBuildCurrent } from '../../src/__fixtures__/built-cli.js';

if (/[/\\]test[/\\]e2e[/\\]/.test(expect.getState().testPath ?? '')) assertBuildCurrent();
