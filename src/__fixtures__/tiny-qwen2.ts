// A tiny random qwen2 (32-token vocabulary, 2 layers) the bundled trainer initialises from config.json
// alone (init: random), so engine and trainer tests run a real model in milliseconds.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
