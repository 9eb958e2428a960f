/**
 * `atk view`'s HTTP server: the page shell, the compiled frontend (dist/viewer), uPlot from the
 * package's node_modules, the JSON API and a server-sent event stream that says which runs changed.
 * Loopback by default; another host needs a token, checked on every request.
 */
import { timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join, normalize } from 'node:path';
import { gzipSync } from 'node:zlib';
import { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { answerApi } from './api.js';
import { EpisodeTokenViews } from './episode-tokens.js';
import { viewerPage } from './page.js';
import { RunCatalog } from './run-catalog.js';
import { watchRuns } from './watch.js';

export interface ViewServerOptions {
  /** Runs directories or run directories. */
  readonly paths: readonly string[];
  readonly host?: string;
  /** 0 (the default) picks a free port. */
  readonly port?: number;
  /** Required for a host other than loopback; then every request must carry it. */
  readonly token?: string;
  /** How often the runs are polled besides file watching. */
  readonly pollMs?: number;
}

export interface ViewServer {
  /** The base URL, with `?token=` when a token is set. */
  readonly url: string;
  readonly catalog: RunCatalog;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const TOKEN_COOKIE = 'atk_view_token';

/**
 * Reads the runs and starts serving them.
 * @throws InputError for a non-loopback host without a token, a path that does not exist, or a port in use.
 */
export async function startViewServer(options: ViewServerOptions): Promise<ViewServer> {
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK.has(host) && !options.token) {
    throw new InputError(`refusing to serve runs on ${host} without a token`, {
      hint: 'add --token <secret> (anyone who can reach the port could read the runs), or leave --host out to stay on 127.0.0.1',
    });
  }
  const catalog = await RunCatalog.open(options.paths);
  const tokens = new EpisodeTokenViews();
  const streams = new Set<ServerResponse>();
  const assets = await assetFiles();
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) =>
      send(req, res, 500, 'application/json', JSON.stringify({ error: (error as Error).message })),
    );
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://viewer');
    // A page on another site that resolves its own name to 127.0.0.1 (DNS rebinding) must not read the runs.
    if (!options.token && !LOOPBACK.has(hostOf(req.headers.host)))
      return send(req, res, 403, 'text/plain', 'atk view answers only to a loopback Host\n');
    if (!authorized(req, url, options.token))
      return send(req, res, 403, 'text/plain', 'atk view: this page needs the token printed when the viewer started\n');
    if (options.token && url.searchParams.get('token') === options.token)
      res.setHeader('set-cookie', `${TOKEN_COOKIE}=${options.token}; HttpOnly; SameSite=Strict; Path=/`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(req, res, 405, 'text/plain', 'GET only\n');
    if (url.pathname === '/api/events') return openStream(res);
    if (url.pathname.startsWith('/api/')) {
      const answer = await answerApi(url.pathname.slice('/api/'.length), url.searchParams, catalog, tokens);
      return send(req, res, answer.status, 'application/json', JSON.stringify(answer.body));
    }
    const asset = assets.get(url.pathname) ?? (url.pathname.startsWith('/app/') ? appFile(url.pathname) : undefined);
    if (asset) {
      const body = await readFile(asset.file).catch(() => undefined);
      return body ? send(req, res, 200, asset.type, body) : send(req, res, 404, 'text/plain', 'not found\n');
    }
    // Every other path is the app: the view is in the URL's fragment, so any link opens the page.
    return send(req, res, 200, 'text/html; charset=utf-8', viewerPage());
  }

  function openStream(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    res.write(': atk view\n\n');
    streams.add(res);
    res.on('close', () => streams.delete(res));
  }

  const watcher = watchRuns(
    catalog,
    (ids) => {
      const data = `event: runs\ndata: ${JSON.stringify({ changed: ids })}\n\n`;
      for (const stream of streams) stream.write(data);
    },
    options.pollMs,
  );
  const heartbeat = setInterval(() => {
    for (const stream of streams) stream.write(': keep-alive\n\n');
  }, 15_000);
  heartbeat.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new InputError(`port ${options.port} is in use`, {
              hint: 'pick another --port, or leave it out for a free one',
            })
          : error,
      ),
    );
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/${options.token ? `?token=${encodeURIComponent(options.token)}` : ''}`,
    catalog,
    close: async () => {
      watcher.close();
      clearInterval(heartbeat);
      for (const stream of streams) stream.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The files served besides the app's modules: uPlot, from wherever npm put it. */
async function assetFiles(): Promise<Map<string, { file: string; type: string }>> {
  const require = createRequire(join(projectRoot(), 'package.json'));
  const uplotDir = dirname(require.resolve('uplot/dist/uPlot.esm.js'));
  return new Map([
    ['/vendor/uplot.js', { file: join(uplotDir, 'uPlot.esm.js'), type: 'text/javascript; charset=utf-8' }],
    ['/vendor/uplot.css', { file: join(uplotDir, 'uPlot.min.css'), type: 'text/css; charset=utf-8' }],
  ]);
}

/** A module of the compiled frontend; none for a path that leaves its folder. */
function appFile(pathname: string): { file: string; type: string } | undefined {
  const name = normalize(pathname.slice('/app/'.length));
  if (name.startsWith('..') || !/^[\w./-]+\.js$/.test(name)) return undefined;
  return { file: join(viewerAppDir(), name), type: 'text/javascript; charset=utf-8' };
}

/** Where `npm run build` puts the compiled frontend (viewer/ compiles to dist/viewer/). */
export function viewerAppDir(): string {
  return join(projectRoot(), 'dist', 'viewer');
}

function authorized(req: IncomingMessage, url: URL, token: string | undefined): boolean {
  if (!token) return true;
  const cookie = /(?:^|;\s*)atk_view_token=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
  const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  return [url.searchParams.get('token'), cookie, bearer].some(
    (given) => given !== null && given !== undefined && sameSecret(given, token),
  );
}

/** The name in a Host header, without the port (and without brackets for IPv6). */
function hostOf(header: string | undefined): string {
  const host = (header ?? '').replace(/:\d+$/, '');
  return host.startsWith('[') ? host.slice(1, -1) : host;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Sends a body, gzipped when the client accepts it and it is worth it. */
function send(req: IncomingMessage, res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  const raw = typeof body === 'string' ? Buffer.from(body) : body;
  const gzip = raw.length > 1024 && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const payload = gzip ? gzipSync(raw) : raw;
  res.writeHead(status, {
    'content-type': type,
    'content-length': payload.length,
    'cache-control': 'no-cache',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  });
  res.end(payload);
}
