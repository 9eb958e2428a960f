import {
  AGENT_GREETING,
  agentSystemPrompt,
  loadPolicy,
  loadTau2Tasks,
  loadUserGuidelines,
  TAU2_TERMINATION_KEY,
  Tau2OptionsSchema,
  userSystemPrompt,
} from '../domains/tau2/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import type { DatasetDefinition, Task, UserSimulationHooks } from './types.js';

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
  userSimulation: tau2UserSimulation(),
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

/**
 * tau2's side of a simulated-user conversation. The user plays from `data.user_system_prompt`, the
 * agent opens with `data.greeting` and the three stop tokens end the conversation: the defaults of
 * {@link UserSimulationHooks}. What tau2 adds is where the ending goes: {@link TAU2_TERMINATION_KEY},
 * read by the `tau2` reward (user_stop and agent_stop are scored; max_steps and too_many_errors
 * score 0, as in the reference).
 */
function tau2UserSimulation(): UserSimulationHooks {
  return { onEnd: (end, env) => void env.state.set(TAU2_TERMINATION_KEY, end) };
}
