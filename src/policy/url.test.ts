import { describe, expect, test } from 'vitest';
import { urlEngineNote } from './url.js';

describe('urlEngineNote', () => {
  test('returns what a url server needs to train or load a checkpoint, and that an eval of the base needs neither', () => {
    expect(urlEngineNote('url', 'http://gpu:8000', false)).toBe(
      "note: the server at http://gpu:8000 needs atk's weight-reload extension (vLLM: VLLM_SERVER_DEV_MODE=1 ... --worker-extension-cls atk_trainer.vllm_worker.WeightReload; SGLang has it built in) to train or to evaluate a checkpoint; atk eval --checkpoint base needs neither\n",
    );
    expect(urlEngineNote('url', 'http://gpu:8000', true)).toMatch(
      /needs its LoRA routes .* atk eval --checkpoint base needs neither\n$/,
    );
    expect(urlEngineNote('vllm', undefined, false)).toBe('');
  });
});
