// A tiny random qwen2 (32-token vocabulary, 2 layers) the bundled trainer initialises from config.json
// alone (init: random), so engine and trainer tests run a real model in milliseconds.
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { projectRoot } from '../util/paths.js';

export const TINY_QWEN2_CONFIG = {
  architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2', vocab_size: 32, hidden_size: 16, intermediate_size: 32,
  num_hidden_layers: 2, num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 64,
  rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: true, torch_dtype: 'float32',
} as const;

/** Writes the tiny model's config.json into `dir` (created) and returns `dir`. */
export function writeTinyModel(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(TINY_QWEN2_CONFIG));
  return dir;
}

/**
 * A loadable Hugging Face directory: `config.json` from `configDir` (default: the tiny config above)
 * with seeded random weights the bundled trainer writes (model.safetensors), plus the tokenizer and
 * chat template files found beside that config.
 */
export async function writeModelWithWeights(dir: string, configDir?: string): Promise<string> {
  const source = configDir ?? writeTinyModel(`${dir}.config`);
  const script = 'import sys\nfrom atk_trainer.modeling import random_policy, read_config\nrandom_policy(read_config(sys.argv[1]), seed=0).save_pretrained(sys.argv[2])';
  await execa('/usr/bin/python3', ['-c', script, source, dir], { env: { PYTHONPATH: join(projectRoot(), 'trainer') } });
  for (const file of ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'generation_config.json']) {
    if (existsSync(join(source, file))) copyFileSync(join(source, file), join(dir, file));
  }
  return dir;
}
