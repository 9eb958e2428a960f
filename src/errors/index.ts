/**
 * User-facing errors. Core code throws these; only the CLI entry point catches them and
 * decides how to print and which exit code to use (see STYLE: "Errors at the edges").
 */
export interface AtkErrorOptions {
  /** A one-line suggestion of what to do next. */
  readonly hint?: string;
  readonly cause?: unknown;
}

/** Base class: a stable `code`, a one-line `hint` and the process exit code. */
export class AtkError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly exitCode: number;

  constructor(code: string, message: string, exitCode = 1, options: AtkErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.hint = options.hint;
    this.exitCode = exitCode;
  }
}

/** One recipe problem, located in its file. */
export interface ConfigIssue {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  /** Dotted key path, e.g. `algorithm.group_size`; empty for file-level problems. */
  readonly path: string;
  readonly message: string;
}

/** The recipe (or an override) is invalid. Carries every problem found, exit code 2. */
export class ConfigError extends AtkError {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[], options: AtkErrorOptions = {}) {
    super('E_CONFIG', issues.map(formatConfigIssue).join('\n'), 2, options);
    this.issues = issues;
  }
}

/** `file:line:col  key.path: message` — the one format every recipe problem is printed in. */
export function formatConfigIssue(issue: ConfigIssue): string {
  const where = `${issue.file}:${issue.line}:${issue.col}`;
  return issue.path ? `${where}  ${issue.path}: ${issue.message}` : `${where}  ${issue.message}`;
}

/** Bad input other than a recipe: a missing file, a malformed dataset row, a bad flag. */
export class InputError extends AtkError {
  constructor(message: string, options: AtkErrorOptions = {}) {
    super('E_INPUT', message, 2, options);
  }
}

/** An inference engine or other external service failed; wraps the original error as `cause`. */
export class ProviderError extends AtkError {
  constructor(message: string, options: AtkErrorOptions = {}) {
    super('E_PROVIDER', message, 1, options);
  }
}

/** The Python trainer failed: the message names the log file and quotes its last lines. */
export class TrainerError extends AtkError {
  readonly logPath: string | undefined;

  constructor(message: string, logPath?: string, options: AtkErrorOptions = {}) {
    super('E_TRAINER', message, 1, options);
    this.logPath = logPath;
  }
}

/** The user interrupted (Ctrl-C); exit code 130 as shells expect. */
export class CancelledError extends AtkError {
  constructor(message = 'interrupted', options: AtkErrorOptions = {}) {
    super('E_CANCELLED', message, 130, options);
  }
}
