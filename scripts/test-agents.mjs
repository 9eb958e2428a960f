// Trains the tiny model for a step through atk's gateway with the agent frameworks users write
// (src/gateway/agent-frameworks.test.ts): the Strands Agents SDK, the official openai client with function
// calling, and LangChain. The first run makes a venv with examples/requirements-agents.txt (about 200 MB,
// one to three minutes); later runs reuse it until the pins change. Where the package index cannot be
// reached and no venv was made before, it says so and skips. Extra arguments go to vitest.
import { ensureVenv, run } from './venv.mjs';

const made = ensureVenv({ name: 'venv-agents', requirements: 'examples/requirements-agents.txt', offlineSkips: true });
if (made.skipped) {
  console.log(`test:agents: skipped: ${made.skipped}`);
  process.exit(0);
}
run('npx', ['vitest', 'run', 'src/gateway/agent-frameworks.test.ts', ...process.argv.slice(2)], {
  ATK_AGENTS_PYTHON: made.python,
});
