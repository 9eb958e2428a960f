// Shared setup of the TITO benches: a tokenizer (real Qwen3 when the dev dependency is installed), an
// in-process engine double that answers instantly with pre-encoded turns, and a calculator tool.
import { tool } from '@strands-agents/sdk';
import { z } from 'zod';
import { startEngineDouble, type EngineDouble } from '../../src/__fixtures__/engine-double.js';
import { QWEN3_TOKENIZER_DIR } from '../../src/__fixtures__/tokenizers.js';
import type { Engine } from '../../src/engines/types.js';
import type { AgentSpec } from '../../src/rollout/episode.js';
import { loadModelTokenizer, type ModelTokenizer } from '../../src/tokens/index.js';

export const add = tool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => ({ sum: a + b }),
});

export function agentSpec(maxTurns: number): AgentSpec {
  return {
    systemPrompt: 'You are a careful calculator.',
    tools: [add],
    maxTurns,
    maxNewTokens: 256,
    sampling: { temperature: 1, topP: 1, topK: -1 },
    toolCallFormat: 'hermes',
    chatTemplateKwargs: { enable_thinking: false },
  };
}

export function qwen3(): Promise<ModelTokenizer> {
  return loadModelTokenizer(QWEN3_TOKENIZER_DIR);
}

/**
 * A double that calls `add` until the prompt holds `toolTurns` tool responses, then answers. The turn
 * is read from the prompt itself, so any number of concurrent episodes share one stateless double.
 */
export async function instantDouble(tok: ModelTokenizer, toolTurns: number): Promise<EngineDouble> {
  const callIds = tok.encode('<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>');
  const answerIds = tok.encode('The answer is 5.<|im_end|>');
  const toolResponse = tok.encode('<tool_response>')[0];
  return startEngineDouble({
    script: (request) => {
      let seen = 0;
      for (const id of request.promptIds) if (id === toolResponse) seen++;
      return { tokenIds: seen < toolTurns ? callIds : answerIds };
    },
  });
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * `engine`, recording in `gaps` the process CPU (ms) spent between the end of one engine call and the
 * start of the next: atk's own work per turn, engine time excluded.
 */
export function timedEngine(engine: Engine, gaps: number[]): Engine {
  let lastEnd: NodeJS.CpuUsage | undefined;
  return {
    ...engine,
    async generate(prompt, params, signal) {
      const now = process.cpuUsage();
      if (lastEnd) gaps.push((now.user - lastEnd.user + now.system - lastEnd.system) / 1000);
      try {
        return await engine.generate(prompt, params, signal);
      } finally {
        lastEnd = process.cpuUsage();
      }
    },
  };
}
