import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderError } from '../errors/index.js';
import { GatewayError } from './errors.js';
import { GatewayEpisode, type GatewayEpisodeOptions } from './gateway-episode.js';
import { parseCompletionRequest } from './openai-request.js';
import { completionBody, completionChunks, errorChunk, roleChunk, type ReplyMeta } from './openai-response.js';

/** Where one episode's agent reaches the model. */
export interface EpisodeEndpoint {
  readonly episode: GatewayEpisode;
  /** `http://127.0.0.1:<port>/episodes/<id>/v1`: what OPENAI_BASE_URL is set to. */
  readonly baseUrl: string;
  /** The per-episode token the gateway checks (OPENAI_API_KEY). */
  readonly apiKey: string;
  /** Aborts the episode's in-flight engine call; later requests get 404. */
  close(): void;
}

/** The OpenAI-compatible gateway of a run or eval: one base URL per episode, on loopback. */
export interface Gateway {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Random per gateway (one per run): in every completion and tool-call id, so ids never repeat across runs. */
  readonly idPrefix: string;
  /** Registers an episode; its agent may call the gateway until `close()`. */
  open(id: string, options: GatewayEpisodeOptions): EpisodeEndpoint;
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 32 * 1024 * 1024;
const ROUTE = /^\/episodes\/([^/]+)\/(v1\/chat\/completions|v1\/models|reward)\/?$/;

interface OpenEpisode {
  readonly episode: GatewayEpisode;
  readonly apiKey: string;
  readonly abort: AbortController;
}

/**
 * Starts the gateway on 127.0.0.1 (an ephemeral port unless `port` is given). Routes:
 * `POST /episodes/<id>/v1/chat/completions`, `GET /episodes/<id>/v1/models`, `POST /episodes/<id>/reward`.
 * Every route checks the episode's bearer token; every refusal is an OpenAI-shaped error.
 */
export async function startGateway(options: {
  readonly modelName: () => string;
  readonly port?: number;
}): Promise<Gateway> {
  const episodes = new Map<string, OpenEpisode>();
  const idPrefix = randomBytes(6).toString('hex');
  const server = createServer((req, res) => {
    handle(req, res, episodes, options.modelName, idPrefix).catch((error: unknown) => sendError(res, error));
  });
  // Agents keep one connection per episode (keep-alive spares the accept and close of each call) and may
  // think or run tools for a while between calls; stop() closes idle connections itself.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    idPrefix,
    open(id, episodeOptions) {
      if (episodes.has(id)) throw new Error(`gateway: episode ${id} is already open`);
      const open: OpenEpisode = {
        episode: new GatewayEpisode(id, { ...episodeOptions, idPrefix: episodeOptions.idPrefix ?? idPrefix }),
        apiKey: `atk-${randomBytes(18).toString('hex')}`,
        abort: new AbortController(),
      };
      episodes.set(id, open);
      return {
        episode: open.episode,
        baseUrl: `${url}/episodes/${encodeURIComponent(id)}/v1`,
        apiKey: open.apiKey,
        close: () => {
          open.abort.abort(new Error(`episode ${id} ended`));
          episodes.delete(id);
        },
      };
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const open of episodes.values()) open.abort.abort(new Error('gateway stopped'));
        episodes.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  episodes: Map<string, OpenEpisode>,
  modelName: () => string,
  idPrefix: string,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  const route = ROUTE.exec(path);
  if (!route)
    throw new GatewayError(
      404,
      'not_found',
      `no route ${req.method} ${path}; episode agents use /episodes/<id>/v1 as their base URL`,
    );
  const id = decodeURIComponent(route[1]!);
  const open = episodes.get(id);
  if (!open)
    throw new GatewayError(404, 'episode_not_found', `unknown episode '${id}' (it ended, or the base URL is wrong)`);
  if (req.headers.authorization !== `Bearer ${open.apiKey}`)
    throw new GatewayError(
      401,
      'invalid_api_key',
      `wrong or missing API key for episode '${id}'; use the OPENAI_API_KEY atk gave this episode`,
    );

  if (route[2] === 'v1/models') {
    requireMethod(req, 'GET');
    sendJson(res, 200, { object: 'list', data: [{ id: modelName(), object: 'model', created: 0, owned_by: 'atk' }] });
    return;
  }
  requireMethod(req, 'POST');
  const body = await readJson(req);
  if (route[2] === 'reward') {
    const reward = (body as { reward?: unknown } | null)?.reward;
    if (typeof reward !== 'number' || !Number.isFinite(reward))
      throw new GatewayError(400, 'invalid_reward', 'reward: expected {"reward": <finite number>}', 'reward');
    open.episode.reportedReward = reward;
    sendJson(res, 200, { ok: true });
    return;
  }
  const request = parseCompletionRequest(body);
  const meta = (turn: number): ReplyMeta => ({
    id: `chatcmpl-${idPrefix}-${id}-${turn}`,
    created: Math.floor(Date.now() / 1000),
    model: modelName(),
  });
  if (!request.stream) {
    const reply = await open.episode.complete(request, open.abort.signal);
    sendJson(res, 200, completionBody(reply, meta(reply.turn), request.logprobs));
    return;
  }
  // The role chunk goes out when the engine is asked; the engine answers in one piece, so the rest follows it.
  let streamMeta: ReplyMeta | undefined;
  const reply = await open.episode.complete(request, open.abort.signal, (turn) => {
    streamMeta = meta(turn);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(roleChunk(streamMeta, request.includeUsage));
  });
  res.end(completionChunks(reply, streamMeta ?? meta(reply.turn), request.logprobs, request.includeUsage));
}

function requireMethod(req: IncomingMessage, method: string): void {
  if (req.method !== method)
    throw new GatewayError(405, 'method_not_allowed', `${req.method} is not allowed here; use ${method}`);
}

/** The body as JSON; read with stream events, as an async iterator costs more per request. */
function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.resume();
        reject(
          new GatewayError(413, 'request_too_large', `the request body is over ${MAX_BODY_BYTES / 1024 / 1024} MiB`),
        );
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      try {
        resolve(JSON.parse((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8')));
      } catch (error) {
        reject(
          new GatewayError(400, 'invalid_json', `the request body is not valid JSON: ${(error as Error).message}`),
        );
      }
    });
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Refusals in OpenAI's shape; engine failures as 502, anything else as 500, each with a one-line message. */
function sendError(res: ServerResponse, error: unknown): void {
  const refusal =
    error instanceof GatewayError
      ? error
      : error instanceof ProviderError
        ? new GatewayError(502, 'engine_error', `the engine failed: ${error.message.split('\n')[0]}`)
        : new GatewayError(
            500,
            'internal_error',
            `gateway error: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`,
          );
  if (res.headersSent) {
    // A stream already under way: the error is its last event, which OpenAI clients raise.
    if (!res.writableEnded) res.end(errorChunk(refusal.toBody()));
    return;
  }
  sendJson(res, refusal.status, refusal.toBody());
}
