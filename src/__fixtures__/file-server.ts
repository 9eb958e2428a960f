import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

/** How the next responses misbehave, to test downloaders against real HTTP on 127.0.0.1. */
export interface FileServerFaults {
  /** Destroy the connection after sending this many body bytes of the next response to this path. */
  cutAfter?: Record<string, number>;
  /** Answer Range requests with the whole file (status 200), as some servers do. */
  ignoreRange?: boolean;
  /** Serve these paths with one byte changed. */
  corrupt?: Set<string>;
}

/** A static file server with HTTP Range support and switchable faults. */
export interface FileServer {
  readonly url: string;
  readonly requests: { path: string; headers: IncomingHttpHeaders }[];
  readonly faults: FileServerFaults;
  close(): Promise<void>;
}

/** Serve `files` (URL path -> contents) on a free loopback port, with `headers` (URL path -> extra response headers). */
export async function startFileServer(
  files: Readonly<Record<string, Buffer>>,
  headers: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
): Promise<FileServer> {
  const requests: FileServer['requests'] = [];
  const faults: FileServerFaults = {};
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '';
    requests.push({ path, headers: req.headers });
    let body = files[path];
    if (!body) {
      res.writeHead(404).end('not found');
      return;
    }
    if (faults.corrupt?.has(path)) {
      body = Buffer.from(body);
      body[Math.floor(body.length / 2)] ^= 0x01;
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    let start = 0;
    if (range && !faults.ignoreRange) {
      start = Number(range[1]);
      if (start >= body.length) {
        res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
        return;
      }
      res.writeHead(206, {
        'content-length': body.length - start,
        'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
      });
    } else {
      res.writeHead(200, { 'content-length': body.length, 'accept-ranges': 'bytes', ...headers[path] });
    }
    const cut = faults.cutAfter?.[path];
    if (cut !== undefined) {
      delete faults.cutAfter![path];
      // The FIN comes a moment after the bytes: fetch errors its body stream on a premature end,
      // which discards chunks still queued, so a client still opening its .part file (slow under a
      // loaded CI) would see an interruption with nothing written.
      res.write(body.subarray(start, start + cut), () => setTimeout(() => res.socket?.end(), 500));
      return;
    }
    res.end(body.subarray(start));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    faults,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
