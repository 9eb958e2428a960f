import { readdir } from 'node:fs/promises';
import { execa } from 'execa';
import { InputError } from '../errors/index.js';
import { trainerPythonPath } from '../util/paths.js';
import { findTorchPython } from './find-python.js';

/** Files of a Hugging Face model directory that hold the model (weights, config, a LoRA adapter). */
export const MODEL_FILES =
  /^(config\.json|model.*\.safetensors(\.index\.json)?|adapter_config\.json|adapter_model\.safetensors)$/;

/**
 * Runs the trainer's `python -m atk_trainer.merge_lora`: the LoRA adapter in `adapterDir` merged into the
 * base model its adapter_config.json names, written to `out` as a plain Hugging Face model. Returns the
 * model files written.
 * @throws InputError when no Python with torch is found or the adapter does not fit its base.
 */
export async function mergeLoraAdapter(
  adapterDir: string,
  out: string,
  recipePython: string | undefined,
): Promise<string[]> {
  const { python, tried } = await findTorchPython(recipePython);
  if (!python)
    throw new InputError(`merging a LoRA adapter needs a Python that can import torch (tried ${tried.join('; ')})`, {
      hint: 'run `atk setup --yes`',
    });
  const result = await execa(python, ['-m', 'atk_trainer.merge_lora', adapterDir, out], {
    env: { PYTHONPATH: trainerPythonPath() },
    reject: false,
  });
  if (result.exitCode === 2) throw new InputError(String(result.stderr).trim().split('\n')[0] ?? 'merge_lora failed');
  if (result.exitCode !== 0)
    throw new Error(`python -m atk_trainer.merge_lora exited ${result.exitCode}: ${String(result.stderr).trim()}`);
  return (await readdir(out)).filter((name) => MODEL_FILES.test(name)).sort();
}
