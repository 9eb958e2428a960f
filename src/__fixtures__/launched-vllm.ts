// The vLLM a launched-engine test starts. In the fast suite, the stand-in: atk's embedded engine behind a
// `vllm serve` command line, no vLLM needed. Under `npm run test:vllm` (ATK_TEST_VLLM=real), real vLLM
// from atk's venv, started as a user's recipe starts it (no command), with what vLLM's CPU backend needs:
// a model its CPU attention accepts (head size >= 32, as models/tiny-arith's; the tiny qwen2's 8 is
// refused), float32 as the trainer computes, and start-up limits for its compile warm-up (40-130 s on
// a quiet 2-core machine, over 900 s on a loaded one).
import { join } from 'node:path';
import { vllmVenvDir } from '../engines/launch/index.js';
import { EngineSchema } from '../recipe/schema.js';
import type { EngineConfig } from '../recipe/schema.js';
import { projectRoot } from '../util/paths.js';
import { embeddedVllmCommand } from './engine-processes.js';

/** Whether the launched-engine tests run against real vLLM (npm run test:vllm). */
export const REAL_VLLM = process.env.ATK_TEST_VLLM === 'real';

/** models/tiny-arith: the shipped model, which real vLLM serves on a CPU. */
export const TINY_ARITH_MODEL = join(projectRoot(), 'models', 'tiny-arith');

/**
 * Overrides that run the trainer on the Python of real vLLM's venv (its torch): a torch.distributed group
 * (the weight broadcast) needs the same torch on both ends, its rendezvous store protocol changed between
 * torch 1.13 (Debian's, the trainer's here) and 2.x (vLLM's). None with the stand-in.
 */
export const TRAINER_ON_VLLM_TORCH: readonly string[] = REAL_VLLM
  ? [`model.trainer.python=${join(vllmVenvDir(), 'bin', 'python')}`, 'model.trainer.backend=builtin']
  : [];

/** Real vLLM's start-up limit: its compile warm-up took from 40 s (quiet, cached) to over 900 s (load 20 on 2 cores). */
const REAL_STARTUP_S = 1800;

/** Per-test limit where a test starts vLLM: real vLLM's start-up plus what the test then does. */
export const LAUNCHED_TEST_TIMEOUT_MS = REAL_VLLM ? (REAL_STARTUP_S + 1800) * 1000 : 180_000;

/**
 * `model.engine` settings (besides `kind`) that launch the vLLM under test; `extra` is added. Real vLLM:
 * float32, a 512-token window (tiny-arith's), a 1 GiB KV cache and no chunked prefill (a machine other
 * tests share), and up to 30 minutes to start.
 */
export function launchedVllmSettings(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const settings = REAL_VLLM
    ? {
        startup_timeout_s: REAL_STARTUP_S,
        max_model_len: 512,
        args: ['--dtype', 'float32', '--no-enable-chunked-prefill'],
        env: { VLLM_CPU_KVCACHE_SPACE: '1' },
      }
    : { command: embeddedVllmCommand, startup_timeout_s: 120 };
  return { ...settings, ...extra };
}

/** The model.engine of a launched vLLM under test, parsed as a recipe's. */
export function launchedVllmEngine(extra: Record<string, unknown> = {}): EngineConfig {
  return EngineSchema.parse({ kind: 'vllm', ...launchedVllmSettings(extra) });
}

/** A recipe line `  engine: {...}` (YAML flow) that launches the vLLM under test. */
export function launchedVllmYaml(extra: Record<string, unknown> = {}): string {
  return `  engine: ${JSON.stringify({ kind: 'vllm', ...launchedVllmSettings(extra) })}`;
}
