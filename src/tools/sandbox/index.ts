/**
 * Running model-written code: bubblewrap namespaces (no network, no view of the host but the
 * read-only system Python needs, own empty tmpfs working directory), rlimits on CPU, memory,
 * processes and file size, wall-clock and output limits, and the whole process tree killed
 * afterwards. Falls back to rlimits only, with a loud warning, where bwrap cannot run.
 */
export {
  sandboxCapabilities,
  defaultPython,
  type SandboxCapabilities,
  type SandboxProbeOptions,
} from './capabilities.js';
export {
  SandboxPool,
  sharedSandboxPool,
  sandboxPoolSizeOption,
  runSandboxed,
  type SandboxPoolOptions,
  type SandboxWarningListener,
} from './pool.js';
export {
  DEFAULT_LIMITS,
  type SandboxLimits,
  type SandboxRequest,
  type SandboxResult,
  type SandboxStatus,
  type SandboxIsolation,
} from './types.js';
export {
  runCodeTests,
  stdoutMatches,
  jsonEqual,
  type TestRunOptions,
  type TestRunSummary,
  type TestOutcome,
  type TestVerdict,
} from './test-runner.js';
