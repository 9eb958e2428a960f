import { resolve } from 'node:path';
import { launch } from '../util/launcher.js';

/** How one external agent run ended. */
export interface AgentOutcome {
  /** Set when the run failed: non-zero exit, crash, timeout, HTTP error, unreadable answer. */
  readonly error?: string;
  readonly timedOut: boolean;
  /** The agent's JSON result: its stdout's last line (command) or the response body (url), when it is a JSON object. */
  readonly result?: Readonly<Record<string, unknown>>;
  /** The end of what the agent wrote to stderr (command) or of its error body (url). */
  readonly log: string;
}

/** What an agent run is given: the task, where the model is, and when to give up. */
export interface AgentInvocation {
  readonly task: Readonly<Record<string, unknown>>;
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly episodeId: string;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

const LOG_TAIL = 4_000;
const STDOUT_TAIL = 256 * 1024;

/**
 * Runs `command` once for an episode: OPENAI_BASE_URL, OPENAI_API_KEY and ATK_EPISODE_ID in its
 * environment, the task as JSON on stdin. Its own process group is killed on timeout or cancel, so a
 * hung agent cannot outlive the episode (nor the children it started).
 */
export function runAgentCommand(
  spec: { readonly command: readonly string[]; readonly cwd: string; readonly env: Readonly<Record<string, string>> },
  run: AgentInvocation,
): Promise<AgentOutcome> {
  return new Promise((done) => {
    const [file, ...args] = spec.command;
    const child = launch(file!, args, {
      cwd: resolve(spec.cwd),
      env: {
        ...process.env,
        ...spec.env,
        OPENAI_BASE_URL: run.baseUrl,
        OPENAI_API_KEY: run.apiKey,
        ATK_EPISODE_ID: run.episodeId,
      },
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let spawnError: string | undefined;
    child.stdout.setEncoding('utf8').on('data', (text: string) => void (stdout = (stdout + text).slice(-STDOUT_TAIL)));
    child.stderr.setEncoding('utf8').on('data', (text: string) => void (stderr = (stderr + text).slice(-LOG_TAIL)));
    // An agent that never reads stdin (or has exited) must not crash the run with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(`${JSON.stringify(run.task)}\n`);
    const kill = (): void => child.kill('SIGKILL', true);
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, run.timeoutMs);
    const onAbort = (): void => kill();
    run.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (error) => void (spawnError = `cannot start ${file}: ${error.message}`));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      run.signal?.removeEventListener('abort', onAbort);
      const log = stderr.trim();
      const result = lastLineObject(stdout);
      const error =
        spawnError ??
        (timedOut
          ? `agent timed out after ${run.timeoutMs / 1000} s`
          : code !== 0
            ? `agent ${signal ? `was killed by ${signal}` : `exited with code ${code}`}${log ? `: ${log.split('\n').at(-1)}` : ''}`
            : undefined);
      done({ ...(error ? { error } : {}), timedOut, ...(result ? { result } : {}), log });
    });
  });
}

/**
 * POSTs `{task, base_url, api_key, episode_id}` to a running agent server (Agent Lightning's runner
 * shape) and reads its JSON answer as the result.
 */
export async function callAgentServer(url: string, run: AgentInvocation): Promise<AgentOutcome> {
  const timeout = AbortSignal.timeout(run.timeoutMs);
  const signal = run.signal ? AbortSignal.any([timeout, run.signal]) : timeout;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: run.task, base_url: run.baseUrl, api_key: run.apiKey, episode_id: run.episodeId }),
      signal,
    });
    text = await response.text();
  } catch (error) {
    if (timeout.aborted)
      return { error: `agent server ${url} did not answer within ${run.timeoutMs / 1000} s`, timedOut: true, log: '' };
    return { error: `agent server ${url} failed: ${(error as Error).message}`, timedOut: false, log: '' };
  }
  const log = text.slice(-LOG_TAIL);
  if (!response.ok)
    return {
      error: `agent server ${url} answered HTTP ${response.status}${log ? `: ${log.split('\n')[0]}` : ''}`,
      timedOut: false,
      log,
    };
  const result = jsonObject(text);
  if (text.trim() !== '' && !result)
    return { error: `agent server ${url} answered something other than a JSON object`, timedOut: false, log };
  return { timedOut: false, ...(result ? { result } : {}), log: '' };
}

function lastLineObject(stdout: string): Record<string, unknown> | undefined {
  const last = stdout.trimEnd().split('\n').at(-1) ?? '';
  return jsonObject(last);
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
