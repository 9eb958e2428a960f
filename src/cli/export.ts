import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { InputError } from '../errors/index.js';
import { findRun } from '../runs/index.js';
import { defineCommand } from './define-command.js';
import { runPositional, runsDirOption } from './run-options.js';

export interface ExportOptions {
  readonly run: string;
  readonly out: string;
  readonly runsDir: string;
}

/** Files of a Hugging Face model directory that come from the tokenizer, not the checkpoint. */
const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'generation_config.json',
  'chat_template.jinja',
  'special_tokens_map.json',
];
/** Checkpoint files that make up the model (trainer state and atk's marker stay behind). */
const MODEL_FILES =
  /^(config\.json|model.*\.safetensors(\.index\.json)?|adapter_config\.json|adapter_model\.safetensors)$/;

export const exportCommand = defineCommand({
  command: 'export <run> <out>',
  describe: "Write a run's newest checkpoint as a Hugging Face model directory (weights + the run's tokenizer)",
  positionals: {
    run: runPositional,
    out: { type: 'string', demandOption: true, describe: 'Directory to write (created if missing)' },
  },
  options: { 'runs-dir': runsDirOption },
  examples: [['atk export runs/quickstart/v001 ./my-model', 'A model vLLM, transformers and atk can load']],
  handler: async (argv) => {
    process.stdout.write(`${await runExport(argv)}\n`);
  },
});

/**
 * Copy the newest complete checkpoint's weights and config, plus the tokenizer files of the run's
 * model, into `out`. Returns a one-line description.
 * @throws InputError when the run has no complete checkpoint.
 */
export async function runExport(options: ExportOptions): Promise<string> {
  const run = await findRun(options.run, options.runsDir);
  const checkpoint = await run.latestCheckpoint();
  if (!checkpoint)
    throw new InputError(`run ${run.dir} has no complete checkpoint`, {
      hint: 'set train.save_every, or let the run finish',
    });
  const resolved = parse(await readFile(run.paths.resolved, 'utf8')) as {
    model?: { path?: string; tokenizer?: string };
  };
  const tokenizerDir = resolved.model?.tokenizer ?? resolved.model?.path;
  const out = resolve(options.out);
  await mkdir(out, { recursive: true });
  const copied: string[] = [];
  for (const name of await readdir(checkpoint.dir)) {
    if (!MODEL_FILES.test(name)) continue;
    await copyFile(join(checkpoint.dir, name), join(out, name));
    copied.push(name);
  }
  if (tokenizerDir) {
    const available = new Set(await readdir(tokenizerDir).catch(() => [] as string[]));
    for (const name of TOKENIZER_FILES.filter((n) => available.has(n))) {
      await copyFile(join(tokenizerDir, name), join(out, name));
      copied.push(name);
    }
  }
  return `exported step ${checkpoint.step} of ${run.dir} to ${out} (${copied.join(', ')})`;
}
