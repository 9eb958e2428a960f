// A port someone else holds, for tests of servers that must start elsewhere when the port picked for
// them is taken before they bind it.
import { createServer } from 'node:net';
import { freePort } from '../util/free-port.js';

export interface TakenPort {
  /** The port a listener in this process holds until release(). */
  readonly port: number;
  /** Every port `pickPort` handed out, in order. */
  readonly picked: number[];
  /** Hands out the held port first, as if another process took it right after it was picked; free ones after. */
  pickPort(): Promise<number>;
  release(): void;
}

export async function takenPort(): Promise<TakenPort> {
  const blocker = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => blocker.once('listening', resolve));
  const address = blocker.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const picked: number[] = [];
  return {
    port,
    picked,
    async pickPort() {
      picked.push(picked.length === 0 ? port : await freePort());
      return picked.at(-1)!;
    },
    release: () => void blocker.close(),
  };
}
