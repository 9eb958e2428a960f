// A tiny random qwen2 (32-token vocabulary, 2 layers) the bundled trainer initialises from config.json
// alone (init: random), so engine and trainer tests run a real model in milliseconds.
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { projectRoot } from '../util/paths.js';

export const TINY_QWEN2_CONFIG = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  vocab_size: 32,
  hidden_size: 16,
  intermediate_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  tie_word_embeddings: true,
  torch_dtype: 'float32',
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
  const script =
    'import sys\nfrom atk_trainer.model.modeling import random_policy, read_config\nrandom_policy(read_config(sys.argv[1]), seed=0).save_pretrained(sys.argv[2])';
  await execa('/usr/bin/python3', ['-c', script, source, dir], { env: { PYTHONPATH: join(projectRoot(), 'trainer') } });
  for (const file of ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'generation_config.json']) {
    if (existsSync(join(source, file))) copyFileSync(join(source, file), join(dir, file));
  }
  return dir;
}

/**
 * A peft adapter (adapter_config.json + adapter_model.safetensors) for the model whose config.json is in
 * `modelDir`, written by the bundled trainer: rank 8, alpha 16 on `targetModules`, with B drawn at random
 * (a trained adapter; a fresh one adds nothing). Returns `dir`.
 */
export async function writeTinyAdapter(
  modelDir: string,
  dir: string,
  targetModules: readonly string[] = ['q_proj'],
): Promise<string> {
  const script = [
    'import json, os, sys, torch',
    'from atk_trainer.train import lora',
    'from atk_trainer.train.config import LoraConfig',
    'from atk_trainer.model.modeling import random_policy, read_config',
    'from atk_trainer.model.safetensors_io import save_file',
    'config = LoraConfig(rank=8, alpha=16.0, target_modules=json.loads(sys.argv[3]))',
    'module = random_policy(read_config(sys.argv[1]), seed=0).module',
    'lora.apply_lora(module, config, use_peft=False)',
    'torch.manual_seed(0)',
    '[torch.nn.init.normal_(m.lora_B.weight, std=0.5) for m in module.modules() if isinstance(m, lora.LoRALinear)]',
    'os.makedirs(sys.argv[2], exist_ok=True)',
    'lora.write_adapter(module, config, sys.argv[1], sys.argv[2], save_file)',
  ].join('\n');
  await execa('/usr/bin/python3', ['-c', script, modelDir, dir, JSON.stringify(targetModules)], {
    env: { PYTHONPATH: join(projectRoot(), 'trainer') },
  });
  return dir;
}
