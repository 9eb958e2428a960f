/**
 * Registers every built-in dataset, fetcher, tool and reward with its registry, and the recipe
 * checks the components bring. Each built-in registers here with one line and a lazy import, so a
 * recipe that never names it never loads it. The CLI entry point calls this once; so does the test
 * setup.
 */
import { checkClusterPlacement } from './cluster/recipe-check.js';
import {
  componentNames,
  componentOptionsFailures,
  customComponents,
  scriptedUserSource,
} from './components/recipe-checks.js';
import { fetchers } from './datasets/fetchers.js';
import { externalAgentProblems } from './gateway/recipe-checks.js';
import { datasets } from './datasets/index.js';
import { addOptionsCheck, addRecipeCheck } from './recipe/checks.js';
import { rewards } from './rewards/index.js';
import { checkEngineSettings, checkUserEngine, weightSyncProblems } from './policy/index.js';
import { teacherProblems } from './policy/teacher.js';
import { contextModelProblems } from './policy/context-model.js';
import { rolloutWorkerProblems } from './run/rollout-workers.js';
import { tools } from './tools/index.js';

let registered = false;

/** Register the built-ins; later calls do nothing (each recipe check must run once). */
export function registerBuiltins(): void {
  if (registered) return;
  registered = true;
  datasets.register('tau2', async () => (await import('./datasets/tau2.js')).tau2Dataset);
  tools.register('tau2', async () => (await import('./tools/tau2.js')).tau2Tools);
  rewards.register('tau2', async () => (await import('./rewards/tau2.js')).tau2Reward);
  datasets.register('deepcoder', async () => (await import('./datasets/deepcoder.js')).deepcoderDataset);
  rewards.register('code_tests', async () => (await import('./rewards/code-tests.js')).codeTestsReward);
  tools.register('run_python', async () => (await import('./tools/run-python.js')).runPythonTools);
  datasets.register('arith', async () => (await import('./datasets/arith.js')).arithDataset);
  datasets.register('gsm8k', async () => (await import('./datasets/gsm8k.js')).gsm8kDataset);
  datasets.register('helpdesk', async () => (await import('./datasets/helpdesk.js')).helpdeskDataset);
  tools.register('calculator', async () => (await import('./tools/calculator.js')).calculatorTools);
  rewards.register('math_answer', async () => (await import('./rewards/math-answer.js')).mathAnswerReward);
  datasets.register('file', async () => (await import('./datasets/file.js')).fileDataset);
  tools.register('module', async () => (await import('./tools/module.js')).moduleTools);
  tools.register('mcp', async () => (await import('./tools/mcp.js')).mcpTools);
  rewards.register('module', async () => (await import('./rewards/module.js')).moduleReward);
  rewards.register('command', async () => (await import('./rewards/command.js')).commandReward);
  rewards.register('judge', async () => (await import('./rewards/judge.js')).judgeReward);
  rewards.register('reported', async () => (await import('./gateway/reported-reward.js')).reportedReward);
  fetchers.register('gsm8k', async () => (await import('./datasets/fetch-gsm8k.js')).gsm8kFetcher);
  fetchers.register('tau2', async () => (await import('./datasets/fetch-tau2.js')).tau2Fetcher);
  fetchers.register('deepcoder', async () => (await import('./datasets/fetch-deepcoder.js')).deepcoderFetcher);

  addRecipeCheck(componentNames);
  addRecipeCheck(checkEngineSettings);
  addRecipeCheck(checkUserEngine);
  addRecipeCheck(customComponents);
  addRecipeCheck(externalAgentProblems);
  addRecipeCheck(scriptedUserSource);
  addRecipeCheck((recipe) => checkClusterPlacement(recipe));
  addRecipeCheck(weightSyncProblems);
  addRecipeCheck(teacherProblems);
  addRecipeCheck(contextModelProblems);
  addRecipeCheck(rolloutWorkerProblems);
  addOptionsCheck(componentOptionsFailures);
}
