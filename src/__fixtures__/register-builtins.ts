/** Vitest setup: every test process sees the built-in components, as the CLI entry point does. */
import { registerBuiltins } from '../builtins.js';

registerBuiltins();
