import type { UserSimulationHooks } from '../../datasets/types.js';
import { TAU2_TERMINATION_KEY } from './episode.js';

/**
 * tau2's side of a simulated-user conversation. The user plays from `data.user_system_prompt`, the
 * agent opens with `data.greeting` and the three stop tokens end the conversation: the defaults of
 * {@link UserSimulationHooks}. What tau2 adds is where the ending goes: {@link TAU2_TERMINATION_KEY},
 * read by the `tau2` reward (user_stop and agent_stop are scored; max_steps and too_many_errors
 * score 0, as in the reference).
 */
export const tau2UserSimulation: UserSimulationHooks = {
  onEnd: (end, env) => void env.state.set(TAU2_TERMINATION_KEY, end),
};
