// The engine double of the episode benches on a thread of its own, so the run thread's CPU can be measured
// without the double's share: it calls the calculator until the prompt holds `toolTurns` tool responses,
// then answers. The turn is read from the prompt itself, so concurrent episodes share one stateless double.
import type { EventLoopUtilization } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { startEngineDouble } from '../../src/__fixtures__/engine-double.js';

interface DoubleScript {
  readonly callIds: number[];
  readonly answerIds: number[];
  readonly toolResponse: number;
  readonly toolTurns: number;
}

export interface DoubleThread {
  readonly url: string;
  /** CPU seconds the double's thread has used so far. */
  cpuSeconds(): Promise<number>;
  /** The double's event-loop time so far, busy and idle. */
  eventLoop(): EventLoopUtilization;
  close(): Promise<void>;
}

/** Starts the double on its own thread; its URL once it listens. */
export async function startCalculatorDouble(script: DoubleScript): Promise<DoubleThread> {
  const here = fileURLToPath(import.meta.url);
  const thread = new Worker(here, {
    workerData: script,
    execArgv: [...process.execArgv, '--import', fileURLToPath(import.meta.resolve('tsx'))],
  });
  const url = await new Promise<string>((resolve, reject) => {
    thread.once('message', resolve);
    thread.once('error', reject);
  });
  return {
    url,
    cpuSeconds: () =>
      new Promise((resolve) => {
        thread.once('message', resolve);
        thread.postMessage('cpu');
      }),
    eventLoop: () => thread.performance.eventLoopUtilization(),
    close: async () => void (await thread.terminate()),
  };
}

if (!isMainThread) {
  const { callIds, answerIds, toolResponse, toolTurns } = workerData as DoubleScript;
  const double = await startEngineDouble({
    record: false,
    script: (request) => {
      let seen = 0;
      for (const id of request.promptIds) if (id === toolResponse) seen++;
      return { tokenIds: seen < toolTurns ? callIds : answerIds };
    },
  });
  parentPort!.postMessage(double.url);
  parentPort!.on('message', () => {
    const { user, system } = process.threadCpuUsage();
    parentPort!.postMessage((user + system) / 1e6);
  });
}
