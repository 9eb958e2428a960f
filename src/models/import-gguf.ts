import { existsSync, readdirSync, statSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { execa } from 'execa';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { ggufPython } from '../setup/gguf-python.js';
import { trainerPythonPath } from '../util/paths.js';

/** The dtypes `atk model import --dtype` writes. */
export const IMPORT_DTYPES = ['float32', 'bfloat16', 'float16'] as const;
export type ImportDtype = (typeof IMPORT_DTYPES)[number];

export interface GgufImportOptions {
  /** A .gguf file, or with `member` a zip (wheel) holding one. */
  readonly file: string;
  readonly member?: string;
  /** The directory to write; must not exist or be empty. */
  readonly out: string;
  readonly dtype?: ImportDtype;
  readonly print: (line: string) => void;
  readonly trainerPython?: string;
}

const SummarySchema = z.object({
  out: z.string(),
  architecture: z.string(),
  model_type: z.string(),
  parameters: z.number(),
  tensors: z.number(),
  tensor_types: z.record(z.string(), z.number()),
  dtype: z.string(),
  gguf: z.string(),
  files: z.array(z.string()),
});
/** What the importer wrote, as it reports it. */
export type GgufImportSummary = z.infer<typeof SummarySchema>;

/**
 * Converts a GGUF file into a Hugging Face model directory (config.json, safetensors, tokenizer files and
 * chat template from its metadata) with `python -m atk_trainer.import_gguf`, run by the venv of
 * `ggufPython`. The directory appears whole or not at all: the importer writes a sibling directory that
 * is renamed into place at the end.
 * @throws InputError for a missing file, an `out` that holds files, or a GGUF atk cannot import (its reason
 * in one line); ProviderError when the importer's venv cannot be installed.
 */
export async function importGguf(options: GgufImportOptions): Promise<GgufImportSummary> {
  const file = resolve(options.file);
  if (!existsSync(file) || !statSync(file).isFile()) throw new InputError(`${options.file}: no such file`);
  const out = resolve(options.out);
  if (existsSync(out) && (!statSync(out).isDirectory() || readdirSync(out).length > 0))
    throw new InputError(`${options.out} already exists and is not an empty directory`, {
      hint: 'choose another directory, or remove it first',
    });
  const python = await ggufPython({
    print: options.print,
    ...(options.trainerPython ? { trainerPython: options.trainerPython } : {}),
  });
  const partial = join(dirname(out), `.${out.split('/').pop()}.importing-${process.pid}`);
  await rm(partial, { recursive: true, force: true });
  const args = ['-m', 'atk_trainer.import_gguf', file, partial, '--dtype', options.dtype ?? 'float32'];
  if (options.member) args.push('--member', options.member);
  try {
    const result = await execa(python, args, { env: { PYTHONPATH: trainerPythonPath() }, reject: false });
    if (result.exitCode === 2)
      throw new InputError(
        firstLine(String(result.stderr))
          .replace(/^import_gguf: /, '')
          .replace(partial, out),
      );
    if (result.exitCode !== 0)
      throw new Error(`python -m atk_trainer.import_gguf exited ${result.exitCode}: ${String(result.stderr).trim()}`);
    const summary = SummarySchema.parse(JSON.parse(String(result.stdout).trim().split('\n').pop() ?? ''));
    await rm(out, { recursive: true, force: true }); // an empty directory, checked above
    await rename(partial, out);
    return { ...summary, out };
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? 'import_gguf failed';
}
