import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProviderError } from '../errors/index.js';
import { runTokenHeaders } from '../util/run-token.js';

/** Where and how patiently to talk to one server. */
export interface HttpTarget {
  /** Name used in messages, e.g. `vllm`. */
  readonly name: string;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
}

const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Sends one JSON request over Node's shared keep-alive pool and returns the parsed reply. Only
 * connection errors are retried (the request never reached a model); a timeout or an HTTP error is not.
 * @throws ProviderError with the server's own message on non-2xx, on timeout, on unreadable JSON, and
 * when the server stays unreachable; the signal's reason when the caller aborts.
 */
export async function requestJson(
  target: HttpTarget,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<unknown> {
  const text = await requestText(target, method, path, body, signal);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ProviderError(`${target.name} ${method} ${path} answered with invalid JSON: ${text.slice(0, 200)}`, {
      cause: error,
    });
  }
}

/**
 * As requestJson, for endpoints that answer plain text (vLLM's LoRA and cache routes): the 2xx body as text.
 * @throws as requestJson, except for JSON parsing.
 */
export async function requestText(
  target: HttpTarget,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<string> {
  const url = new URL(target.baseUrl.replace(/\/+$/, '') + path);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  for (let attempt = 0; ; attempt++) {
    let status: number;
    let text: string;
    try {
      ({ status, text } = await send(url, method, payload, target.timeoutMs, signal));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof RequestTimeout) {
        throw new ProviderError(`${target.name} ${method} ${path} timed out after ${target.timeoutMs} ms`, {
          hint: 'raise rollout.request_timeout_s or lower agent.max_new_tokens',
          cause: error,
        });
      }
      const code = connectionErrorCode(error);
      if (code !== undefined && attempt < target.retries) {
        await sleep(target.backoffMs * 2 ** attempt, undefined, signal ? { signal } : undefined).catch(() => {
          throw signal?.reason;
        });
        continue;
      }
      throw new ProviderError(
        `${target.name} at ${target.baseUrl} is unreachable (${code ?? (error as Error).message})`,
        {
          hint: 'is the engine running and healthy? see logs/engine.log',
          cause: error,
        },
      );
    }
    if (status < 200 || status >= 300) {
      throw new ProviderError(`${target.name} ${method} ${path} answered ${status}: ${serverMessage(text)}`, {
        hint:
          status < 500
            ? 'the engine rejected the request; its message says why'
            : 'the engine failed; see logs/engine.log',
      });
    }
    return text;
  }
}

/**
 * Keep-alive pools shared by every client in the process. node:http rather than fetch: fetch's machinery
 * per call (web streams, Request and Response objects, combined abort signals) was ~20% of atk's CPU
 * per agent turn. Idle sockets close after 4 s, before servers' own keep-alive limits (uvicorn: 5 s),
 * so a request never goes out on a socket the server is closing.
 */
const pools = {
  'http:': new http.Agent({ keepAlive: true, timeout: 4000 }),
  'https:': new https.Agent({ keepAlive: true, timeout: 4000 }),
};

class RequestTimeout extends Error {}

/** One HTTP exchange: the status and the body as text. @throws RequestTimeout, the signal's reason, socket errors. */
function send(
  url: URL,
  method: 'GET' | 'POST',
  payload: string | undefined,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const headers: Record<string, string | number> = runTokenHeaders();
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    const request = (secure ? https : http).request(url, {
      method,
      headers,
      agent: pools[secure ? 'https:' : 'http:'],
    });
    const fail = (error: unknown): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      request.destroy();
      reject(error);
    };
    const onAbort = (): void => fail(signal!.reason);
    request.on('error', fail); // first: destroying the request emits one ('socket hang up')
    const timer = setTimeout(() => fail(new RequestTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
    if (signal?.aborted) return fail(signal.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', fail);
      response.on('end', () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve({
          status: response.statusCode ?? 0,
          text: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'),
        });
      });
    });
    request.end(payload);
  });
}

/** True when `GET path` answers 2xx within min(timeout, 5 s); never throws. */
export async function probe(target: HttpTarget, path: string): Promise<boolean> {
  try {
    const response = await fetch(target.baseUrl.replace(/\/+$/, '') + path, {
      headers: runTokenHeaders(),
      signal: AbortSignal.timeout(Math.min(target.timeoutMs, 5000)),
    });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

function connectionErrorCode(error: unknown): string | undefined {
  for (
    let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.code === 'string' && CONNECTION_ERRORS.has(e.code)) return e.code;
  }
  return undefined;
}

/** The message of vLLM/OpenAI (`{error: {message}}`, `{message}`), FastAPI (`{detail}`) or plain-text errors. */
function serverMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const message = typeof body.error === 'object' ? body.error?.message : (body.error ?? body.message ?? body.detail);
    if (message !== undefined) return typeof message === 'string' ? message : JSON.stringify(message);
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.trim().slice(0, 500) || '(empty body)';
}
