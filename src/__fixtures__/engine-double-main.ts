// The engine double as a process that takes `vllm serve` or `python -m sglang.launch_server` arguments,
// so the engine launcher can start it through its real code path (model.engine.command). It prints its
// arguments and CUDA_VISIBLE_DEVICES (log-capture tests read them) and exits cleanly on SIGTERM.
// Env: ATK_DOUBLE_DELAY_MS delays listening (a slow model load); ATK_DOUBLE_VERSION is the reported version.
import { setTimeout as sleep } from 'node:timers/promises';
import { adminRoutes, type AdminState } from './engine-admin-double.js';
import { seededScript, startEngineDouble } from './engine-double.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
const protocol = argv.includes('--model-path') ? 'sglang' : 'vllm';
const served = flag('--served-model-name') ?? 'policy';
const runtimeLora =
  protocol === 'vllm'
    ? ['1', 'true'].includes((process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING ?? '').toLowerCase())
    : argv.includes('--enable-lora');
console.log(`engine-double: pid ${process.pid}, argv ${JSON.stringify(argv)}`);
console.log(
  `engine-double: CUDA_VISIBLE_DEVICES=${process.env.CUDA_VISIBLE_DEVICES ?? ''} VLLM_ALLOW_RUNTIME_LORA_UPDATING=${process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING ?? ''}`,
);
await sleep(Number(process.env.ATK_DOUBLE_DELAY_MS ?? 0));
const state: AdminState = { models: [served], calls: [], weightVersion: 'default', weightsPath: undefined };
const double = await startEngineDouble({
  script: seededScript(256, 302),
  models: state.models,
  port: Number(flag('--port')),
  routes: adminRoutes(state, {
    protocol,
    runtimeLora,
    version: process.env.ATK_DOUBLE_VERSION ?? (protocol === 'vllm' ? '0.11.0' : '0.5.4'),
  }),
});
console.log(`engine-double: ${protocol} listening on ${double.url}`);
process.on('SIGTERM', () => {
  console.log('engine-double: SIGTERM, shutting down');
  void double.close().then(() => process.exit(0));
});
