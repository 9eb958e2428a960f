import { AGENT_GREETING, agentSystemPrompt, loadPolicy, loadTau2Tasks, loadUserGuidelines, Tau2OptionsSchema, tau2UserSimulation, userSystemPrompt } from '../domains/tau2/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import type { DatasetDefinition, Task } from './types.js';

/**
 * tau2-bench airline/retail tasks (options `domain`, `release`: current | 2025-06-10; splits
 * train, test, base, all). The user's first message comes from the user simulator, so `prompt`
 * is empty; `data` carries the whole task plus the prompts an episode needs: `system_prompt`
 * (policy in the reference framing, for `agent.system_prompt: "{{system_prompt}}"`),
 * `user_system_prompt` and the agent's `greeting`.
 */
export const tau2Dataset: DatasetDefinition = {
  name: 'tau2',
  options: Tau2OptionsSchema,
  userSimulation: tau2UserSimulation,
  async load(split, ctx): Promise<Task[]> {
    const { domain, release } = parseComponentOptions(Tau2OptionsSchema, ctx.options, 'dataset.options');
    const [tasks, policy, guidelines] = await Promise.all([
      loadTau2Tasks(ctx.dataDir, domain, release, split),
      loadPolicy(ctx.dataDir, domain),
      loadUserGuidelines(ctx.dataDir),
    ]);
    const systemPrompt = agentSystemPrompt(policy);
    return tasks.map((task) => ({
      id: `${domain}-${task.id}`,
      prompt: '',
      data: {
        domain,
        release,
        tau2: task,
        system_prompt: systemPrompt,
        user_system_prompt: userSystemPrompt(guidelines, task),
        greeting: AGENT_GREETING,
      },
    }));
  },
};
