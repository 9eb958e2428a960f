// A stand-in for atk itself: launches the engine double through launchEngineProcess, prints the engine's
// pid, then dies the way argv[2] says: `throw` (an uncaught error) or `hang` (waits to be SIGKILLed).
import { launchEngineProcess } from '../engines/launch/engine-process.js';
import { freePort } from '../util/free-port.js';
import { doubleEngineCommand } from './engine-processes.js';

const [mode, logFile] = process.argv.slice(2);
const port = await freePort();
const [file, ...args] = doubleEngineCommand;
const engine = await launchEngineProcess({
  name: 'vllm',
  command: { file, args: [...args, 'model', '--port', String(port)], env: {} },
  port,
  servedModelName: 'policy',
  logFile,
  startupTimeoutMs: 60_000,
});
process.stdout.write(`engine pid ${engine.pid}\n`);
if (mode === 'throw') throw new Error('atk crashed');
setInterval(() => undefined, 1000);
