import { createServer } from 'node:net';

/** A port the OS just handed out on 127.0.0.1 (free unless someone takes it in the next moment). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Tries of a picked port before a start that keeps finding its port taken fails. */
const PORT_ATTEMPTS = 3;

/**
 * Starts a server process on a picked port, and on another when `portTaken` says it found that one
 * taken: a port picked here is free only until someone else binds it, and a Python server binds it
 * seconds later (it imports torch first).
 * @throws the last start's error, when it is not a taken port or after PORT_ATTEMPTS tries.
 */
export async function startOnFreePort<T>(
  start: (port: number) => Promise<T>,
  portTaken: (error: unknown) => Promise<boolean>,
  pickPort: () => Promise<number> = freePort,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await pickPort();
    try {
      return await start(port);
    } catch (error) {
      if (attempt === PORT_ATTEMPTS || !(await portTaken(error))) throw error;
    }
  }
}
