import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { TINY_ARITH_DIR } from '../__fixtures__/embedded-engine.js';
import { resolveRecipe, type ResolvedRecipe } from '../recipe/resolve.js';
import { RecipeSchema } from '../recipe/schema.js';
import { startPolicy } from './index.js';
import type { RunningPolicy } from './policy.js';

// The embedded engine as a recipe starts it: the real trainer process serving models/tiny-arith on CPU.
const dir = mkdtempSync(join(tmpdir(), 'atk-embedded-policy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function recipe(prefixCacheTokens: number): ResolvedRecipe {
  return resolveRecipe(
    RecipeSchema.parse({
      name: 'embedded',
      model: {
        path: TINY_ARITH_DIR,
        engine: { prefix_cache_tokens: prefixCacheTokens },
        trainer: { device: 'cpu', backend: 'builtin', dtype: 'float32' },
      },
      reward: { name: 'math_answer' },
      rollout: { request_timeout_s: 0.05 },
    }),
    dir,
  );
}

/** A greedy 4-token completion of `prompt` from the engine: its tokens, and the prompt tokens it reused. */
async function complete(policy: RunningPolicy, prompt: number[]): Promise<[number[], number]> {
  const response = await fetch(`${policy.engine.baseUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: policy.engine.model,
      prompt,
      max_tokens: 4,
      temperature: 0,
      ignore_eos: true,
      return_token_ids: true,
    }),
  });
  const reply = (await response.json()) as {
    choices: { token_ids: number[] }[];
    usage: { prompt_tokens_details: { cached_tokens: number } };
  };
  return [reply.choices[0]!.token_ids, reply.usage.prompt_tokens_details.cached_tokens];
}

describe('startEmbeddedPolicy', () => {
  test("returns an engine whose prefix cache keeps the recipe's model.engine.prefix_cache_tokens of finished turns, and that names itself in a timeout", async () => {
    const runDir = join(dir, 'run');
    const policy = await startPolicy({ recipe: recipe(24), recipeDir: dir, logsDir: join(runDir, 'logs'), runDir });
    try {
      // A finished turn keeps its prompt and all its sampled tokens but the last: 16 + 3 fit in 24 tokens,
      // so the next turn reuses them; 30 + 3 are over the whole budget and kept not at all (the default,
      // auto, would keep both).
      const short = Array.from({ length: 16 }, (_, i) => 10 + i);
      const long = Array.from({ length: 30 }, (_, i) => 100 + i);
      const [shortReply] = await complete(policy, short);
      const [longReply] = await complete(policy, long);
      expect((await complete(policy, [...short, ...shortReply, 7]))[1]).toBe(19);
      expect((await complete(policy, [...long, ...longReply, 7]))[1]).toBe(0);
      // The engine speaks vLLM's protocol, and says it is the embedded one when a request times out.
      const params = { maxTokens: 400, temperature: 0, topP: 1, topK: -1, stopTokenIds: [] };
      await expect(policy.engine.generate(long, params)).rejects.toThrow(
        'embedded engine POST /v1/completions timed out after 50 ms',
      );
    } finally {
      await policy.close();
    }
    const log = readFileSync(join(runDir, 'logs', 'trainer.log'), 'utf8');
    expect(log).toMatch(/prefix cache: 24 tokens \(0 MiB\) for finished sequences' continuations/);
  });
});
