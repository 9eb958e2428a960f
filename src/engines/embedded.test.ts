import { describeEngineConformance } from '../__fixtures__/engine-conformance.js';
import { startEmbeddedEngine, TINY_ARITH_IM_END } from '../__fixtures__/embedded-engine.js';

// The vLLM client's conformance suite against the real embedded engine: `python -m atk_trainer`
// serving the shipped tiny-arith model (random init), as `engine: embedded` runs it.
describeEngineConformance('vllm client against the embedded engine', async () => {
  const embedded = await startEmbeddedEngine('random');
  return {
    engine: embedded.engine,
    promptIds: [352, 10, 20, 30],
    stopTokenIds: [TINY_ARITH_IM_END],
    close: embedded.stop,
  };
});
