// Stand-ins for the admin endpoints of vLLM and SGLang that weight sync drives (LoRA load/unload, prefix
// cache reset, reload from disk, version), with the request and reply shapes of docs/engines.md.
// Used as the `routes` of the engine double; the served-model list is shared, so a loaded adapter is
// listed by /v1/models and accepted as a model name or SGLang lora_path, as on the real servers.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ExtraRoutes } from './engine-double.js';

/** What the admin endpoints changed, for tests to inspect. */
export interface AdminState {
  /** The double's served names (base model first, then loaded adapters); mutated in place. */
  readonly models: string[];
  /** Every admin call in order. */
  readonly calls: { readonly path: string; readonly body: Record<string, unknown> }[];
  /** SGLang weight_version (set by update_weights_from_disk). */
  weightVersion: string;
  /** Directory of the last full-weight reload. */
  weightsPath: string | undefined;
}

export interface AdminOptions {
  readonly protocol: 'vllm' | 'sglang';
  /** vLLM registers the LoRA routes only with VLLM_ALLOW_RUNTIME_LORA_UPDATING; SGLang with --enable-lora. */
  readonly runtimeLora: boolean;
  /** Reported by GET /version (vLLM) or /get_server_info (SGLang). */
  readonly version: string;
}

/** The admin routes for one protocol over `state`; `GET /_double/calls` lists the admin calls (tests only). */
export function adminRoutes(state: AdminState, options: AdminOptions): ExtraRoutes {
  return (method, url, body) => {
    const path = url.split('?')[0];
    if (method === 'GET' && path === '/_double/calls') return ok(state.calls);
    if (method === 'GET' && path === '/version' && options.protocol === 'vllm') return ok({ version: options.version });
    if (method === 'GET' && (path === '/get_server_info' || path === '/server_info') && options.protocol === 'sglang')
      return ok({ version: options.version });
    if (method === 'GET' && (path === '/get_model_info' || path === '/model_info') && options.protocol === 'sglang') {
      return ok({
        model_path: state.weightsPath ?? state.models[0],
        is_generation: true,
        weight_version: state.weightVersion,
      });
    }
    if (method !== 'POST') return undefined;
    const handler = (options.protocol === 'vllm' ? vllmRoutes : sglangRoutes)[path];
    if (!handler) return undefined;
    state.calls.push({ path, body });
    if (path.includes('lora') && !options.runtimeLora) return { status: 404, body: { detail: 'Not Found' } };
    return handler(state, body);
  };
}

type Reply = { readonly status: number; readonly body: unknown };
type Handler = (state: AdminState, body: Record<string, unknown>) => Reply;

const ok = (body: unknown): Reply => ({ status: 200, body });
const vllmError = (status: number, message: string): Reply => ({
  status,
  body: { error: { message, type: 'BadRequestError', code: status } },
});

const vllmRoutes: Record<string, Handler> = {
  '/v1/load_lora_adapter': (state, { lora_name: name, lora_path: dir }) => {
    if (state.models.includes(String(name)))
      return vllmError(400, `The lora adapter '${String(name)}' has already been loaded.`);
    if (!existsSync(join(String(dir), 'adapter_config.json')))
      return vllmError(400, `No adapter found for ${String(dir)}`);
    state.models.push(String(name));
    return ok(`Success: LoRA adapter '${String(name)}' added successfully.`);
  },
  '/v1/unload_lora_adapter': (state, { lora_name: name }) => {
    const at = state.models.indexOf(String(name));
    if (at <= 0) return vllmError(404, `The lora adapter '${String(name)}' cannot be found.`);
    state.models.splice(at, 1);
    return ok(`Success: LoRA adapter '${String(name)}' removed successfully.`);
  },
  '/reset_prefix_cache': () => ok(''),
};

const sglangRoutes: Record<string, Handler> = {
  '/load_lora_adapter': (state, { lora_name: name, lora_path: dir }) => {
    if (state.models.includes(String(name)))
      return { status: 400, body: { success: false, error_message: `LoRA adapter ${String(name)} is already loaded` } };
    if (!existsSync(join(String(dir), 'adapter_config.json')))
      return { status: 400, body: { success: false, error_message: `no adapter_config.json in ${String(dir)}` } };
    state.models.push(String(name));
    return ok({ success: true, error_message: null, loaded_adapters: loaded(state) });
  },
  '/unload_lora_adapter': (state, { lora_name: name }) => {
    const at = state.models.indexOf(String(name));
    if (at <= 0)
      return { status: 400, body: { success: false, error_message: `LoRA adapter ${String(name)} is not loaded` } };
    state.models.splice(at, 1);
    return ok({ success: true, error_message: null, loaded_adapters: loaded(state) });
  },
  '/flush_cache': () =>
    ok(
      'Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n',
    ),
  '/update_weights_from_disk': (state, { model_path: dir, weight_version: version }) => {
    if (!existsSync(join(String(dir), 'config.json'))) {
      return {
        status: 400,
        body: {
          success: false,
          message: `Failed to update weights: no config.json in ${String(dir)}`,
          num_paused_requests: 0,
        },
      };
    }
    state.weightsPath = String(dir);
    if (typeof version === 'string') state.weightVersion = version;
    return ok({ success: true, message: 'Succeeded to update model weights.', num_paused_requests: 0 });
  },
};

function loaded(state: AdminState): Record<string, string> {
  return Object.fromEntries(state.models.slice(1).map((name) => [name, name]));
}
