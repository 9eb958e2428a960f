import { Agent, ConversationManager, ModelRetryStrategy, NullConversationManager } from '@strands-agents/sdk';
import { beforeAll, describe, expect, test } from 'vitest';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createVllmClient } from '../engines/vllm.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { calculatorTool } from '../tools/calculator.js';
import { createTitoAgent } from './create-agent.js';

/**
 * The SDK defaults that break RL, read off a constructed agent: a printer (streams to stdout), a
 * conversation manager that is not the null one (the default sliding window drops history the
 * trajectory holds), retry strategies (retrying a model call behind the trajectory's back). These are
 * SDK internals; the default agent below proves the probe still sees them after an SDK upgrade.
 */
function rlHazards(agent: Agent): {
  printer: boolean;
  conversationManagers: string[];
  retryStrategies: string[];
  contextManager: boolean;
} {
  const internals = agent as unknown as {
    _printer?: unknown;
    _pluginRegistry: { _pending: unknown[]; _plugins: Map<string, unknown> };
  };
  const plugins = [...internals._pluginRegistry._pending, ...internals._pluginRegistry._plugins.values()];
  return {
    printer: internals._printer !== undefined,
    conversationManagers: plugins
      .filter((p) => p instanceof ConversationManager && !(p instanceof NullConversationManager))
      .map((p) => (p as ConversationManager).name),
    retryStrategies: plugins.filter((p) => p instanceof ModelRetryStrategy).map((p) => (p as ModelRetryStrategy).name),
    contextManager: agent.contextManager !== undefined,
  };
}

let tokenizer: ModelTokenizer;
beforeAll(async () => {
  tokenizer = await loadModelTokenizer(TINY_TOKENIZER_DIR);
});

describe('createTitoAgent', () => {
  test('returns an agent without printer, conversation window, context manager or retry strategy', () => {
    const { agent, model } = createTitoAgent({
      engine: createVllmClient({ baseUrl: 'http://127.0.0.1:9', model: 'policy' }),
      tokenizer,
      parser: hermesParser,
      policyVersion: 0,
      maxNewTokens: 16,
      sampling: { temperature: 1, topP: 1, topK: -1 },
      tools: [calculatorTool()],
    });
    expect(rlHazards(agent)).toStrictEqual({
      printer: false,
      conversationManagers: [],
      retryStrategies: [],
      contextManager: false,
    });
    expect(agent.model).toBe(model);
    // The probe itself: an agent with the SDK's defaults has every one of them.
    const defaults = rlHazards(new Agent({ model }));
    expect([defaults.printer, defaults.conversationManagers.length, defaults.retryStrategies.length]).toStrictEqual([
      true,
      1,
      1,
    ]);
  });
});
