import { describe, expect, test } from 'vitest';
import { rolloutTimeoutsMs } from './rollout-timeouts.js';

const auto = { request_timeout_s: 'auto', episode_timeout_s: 'auto' } as const;

describe('rolloutTimeoutsMs', () => {
  test('returns 120 s and 300 s for auto on a GPU, a launched engine and a small model on a CPU', () => {
    const base = { request: 120_000, episode: 300_000, scale: 1 };
    expect(rolloutTimeoutsMs(auto)).toStrictEqual(base);
    expect(rolloutTimeoutsMs(auto, { engine: 'embedded', device: 'cuda:0', parameters: 1.5e9 })).toStrictEqual(base);
    expect(rolloutTimeoutsMs(auto, { engine: 'vllm', device: 'cpu', parameters: 1.5e9 })).toStrictEqual(base);
    expect(rolloutTimeoutsMs(auto, { engine: 'embedded', device: 'cpu', parameters: 915_072 })).toStrictEqual(base);
  });

  test('returns auto scaled by parameters / 10M for the embedded engine on a CPU, and numbers as written', () => {
    const smollm2 = { engine: 'embedded', device: 'cpu', parameters: 134_515_008 };
    expect(rolloutTimeoutsMs(auto, smollm2)).toStrictEqual({
      request: 1_614_180,
      episode: 4_035_450,
      scale: 13.4515008,
    });
    expect(rolloutTimeoutsMs({ request_timeout_s: 30, episode_timeout_s: 'auto' }, smollm2).request).toBe(30_000);
  });
});
