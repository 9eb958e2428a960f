import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { parse } from 'yaml';
import { InputError } from '../errors/index.js';
import { findRun } from '../runs/index.js';
import { MODEL_FILES, mergeLoraAdapter } from '../trainer/index.js';
import { defineCommand } from './define-command.js';
import { runPositional, runsDirOption } from './run-options.js';

export interface ExportOptions {
  readonly run: string;
  readonly out: string;
  readonly runsDir: string;
  /** Write the base model with a LoRA checkpoint's adapter merged into its weights, not the adapter. */
  readonly mergeLora?: boolean;
}

/** Files of a Hugging Face model directory that come from the tokenizer, not the checkpoint. */
const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'generation_config.json',
  'chat_template.jinja',
  'special_tokens_map.json',
];

export const exportCommand = defineCommand({
  command: 'export <run> <out>',
  describe: "Write a run's newest checkpoint as a Hugging Face model directory (weights + the run's tokenizer)",
  positionals: {
    run: runPositional,
    out: { type: 'string', demandOption: true, describe: 'Directory to write (created if missing)' },
  },
  options: {
    'runs-dir': runsDirOption,
    'merge-lora': {
      type: 'boolean',
      default: false,
      describe:
        "A LoRA run: write the base model with the adapter merged into its weights (base's dtype), no peft needed",
    },
  },
  examples: [
    ['atk export runs/quickstart/v001 ./my-model', 'A model vLLM, transformers and atk can load'],
    ['atk export runs/gsm8k-lora ./merged --merge-lora', 'A LoRA run as one plain model directory'],
  ],
  handler: async (argv) => {
    process.stdout.write(`${await runExport(argv)}\n`);
  },
});

/**
 * Copy the newest complete checkpoint's weights and config (a LoRA run's adapter directory, or with
 * `mergeLora` the base model with the adapter merged in), plus the tokenizer files and chat template of
 * the run's model, into `out`; a run with `model.chat_template` writes that template as the model's (the
 * exported model keeps the tool format it was trained in). Returns a one-line description.
 * @throws InputError when the run has no complete checkpoint, or the merge finds no Python with torch or
 * an adapter that does not fit its base.
 */
export async function runExport(options: ExportOptions): Promise<string> {
  const run = await findRun(options.run, options.runsDir);
  const checkpoint = await run.latestCheckpoint();
  if (!checkpoint)
    throw new InputError(`run ${run.dir} has no complete checkpoint`, {
      hint: 'set train.save_every, or let the run finish',
    });
  const resolved = parse(await readFile(run.paths.resolved, 'utf8')) as {
    model?: { path?: string; tokenizer?: string; chat_template?: string; trainer?: { python?: string } };
  };
  const tokenizerDir = resolved.model?.tokenizer ?? resolved.model?.path;
  const out = resolve(options.out);
  await mkdir(out, { recursive: true });
  const copied: string[] = [];
  const names = await readdir(checkpoint.dir);
  const merge = options.mergeLora === true && names.includes('adapter_config.json');
  if (merge) copied.push(...(await mergeLoraAdapter(checkpoint.dir, out, resolved.model?.trainer?.python)));
  for (const name of merge ? [] : names) {
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
  if (resolved.model?.chat_template) copied.push(...(await keepRunTemplate(resolved.model.chat_template, out)));
  const note = options.mergeLora && !merge ? '; full weights, no adapter to merge' : merge ? '; adapter merged' : '';
  return `exported step ${checkpoint.step} of ${run.dir} to ${out} (${copied.join(', ')}${note})`;
}

/**
 * The run's `model.chat_template` written as the exported model's template: into tokenizer_config.json
 * (where transformers and vLLM read it) and chat_template.jinja when the model had one. Returns what changed.
 */
async function keepRunTemplate(templateFile: string, out: string): Promise<string[]> {
  const template = await readFile(templateFile, 'utf8');
  const configPath = join(out, 'tokenizer_config.json');
  const config = JSON.parse(await readFile(configPath, 'utf8').catch(() => '{}')) as Record<string, unknown>;
  await writeFile(configPath, `${JSON.stringify({ ...config, chat_template: template }, null, 2)}\n`);
  const written = [`chat template ${basename(templateFile)}`];
  if (existsSync(join(out, 'chat_template.jinja'))) await writeFile(join(out, 'chat_template.jinja'), template);
  return written;
}
