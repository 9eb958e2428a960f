import { InputError } from '../../errors/index.js';

/**
 * Debug only: a deliberately broken weight sync, for the tests of the sync probe (src/policy/sync-probe.ts),
 * which must fail the step on each. Set by the environment variable {@link SYNC_FAULT_ENV}, never by a recipe,
 * and announced as a warning when a run starts. The trainer reads the same variable
 * (trainer/atk_trainer/train/sync_fault.py) and breaks its side:
 * - `skip_layer`: full weights written or broadcast for an engine carry decoder layer 0 as it was loaded,
 *   so the engine keeps that layer's old values, as a reload that skipped it would;
 * - `lora_noop`: the adapter written for an engine has zero lora_B tensors: it loads and changes nothing;
 * - `keep_prefix_cache`: no prefix-cache reset after a weight change (here: no `/reset_prefix_cache`, SGLang's
 *   reload keeps its cache; the embedded engine keeps its own), so old keys and values are reused.
 */
export type SyncFault = 'skip_layer' | 'lora_noop' | 'keep_prefix_cache';
export const SYNC_FAULT_ENV = 'ATK_SYNC_FAULT';
const FAULTS: readonly SyncFault[] = ['skip_layer', 'lora_noop', 'keep_prefix_cache'];

/** The fault the environment asks for, if any. @throws InputError for an unknown one. */
export function syncFault(env: NodeJS.ProcessEnv = process.env): SyncFault | undefined {
  const value = env[SYNC_FAULT_ENV];
  if (value === undefined || value === '') return undefined;
  if ((FAULTS as readonly string[]).includes(value)) return value as SyncFault;
  throw new InputError(`${SYNC_FAULT_ENV}=${value} is not a sync fault`, {
    hint: `use ${FAULTS.join(' or ')}, or unset it (it is for the sync probe's tests only)`,
  });
}
