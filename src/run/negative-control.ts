import type { GroupMember } from '../algorithms/batch.js';
import { InputError } from '../errors/index.js';
import { hash32, shuffled } from '../util/random.js';

/**
 * Debug only: deliberately broken training, for the negative controls of `npm run bench helpdesk`,
 * which show that a learning result depends on what it should. Set by the environment variable
 * {@link NEGATIVE_CONTROL_ENV}, never by a recipe, and announced as a warning at every step:
 * - `train_environment_tokens`: every token after the first prompt is trained (loss mask 1), user
 *   and tool turns included, with the logprob 0 they carry, as a masking bug would train them;
 * - `train_first_model_turn_only`: only the first model turn is trained (loss mask 0 on every later
 *   one), as a mask built for single-turn episodes would train a conversation;
 * - `shuffle_rewards`: the step's rewards are permuted across its episodes before advantages, so a
 *   reward no longer belongs to the episode that earned it.
 */
export type NegativeControl = 'train_environment_tokens' | 'train_first_model_turn_only' | 'shuffle_rewards';
export const NEGATIVE_CONTROL_ENV = 'ATK_NEGATIVE_CONTROL';
const CONTROLS: readonly NegativeControl[] = [
  'train_environment_tokens',
  'train_first_model_turn_only',
  'shuffle_rewards',
];

/** The control the environment asks for, if any. @throws InputError for an unknown one. */
export function negativeControl(env: NodeJS.ProcessEnv = process.env): NegativeControl | undefined {
  const value = env[NEGATIVE_CONTROL_ENV];
  if (value === undefined || value === '') return undefined;
  if ((CONTROLS as readonly string[]).includes(value)) return value as NegativeControl;
  throw new InputError(`${NEGATIVE_CONTROL_ENV}=${value} is not a negative control`, {
    hint: `use ${CONTROLS.join(' or ')}, or unset it (it is for npm run bench helpdesk only)`,
  });
}

/** The step's group members broken as `control` says; `seed` orders the reward shuffle. */
export function applyNegativeControl(
  groups: readonly (readonly GroupMember[])[],
  control: NegativeControl,
  seed: number,
): GroupMember[][] {
  if (control !== 'shuffle_rewards') {
    const broken = control === 'train_environment_tokens' ? afterPrompt : firstRunOnly;
    return groups.map((g) => g.map((m) => ({ ...m, tokens: { ...m.tokens, loss_mask: broken(m.tokens.loss_mask) } })));
  }
  const scores = shuffled(
    groups.flat().map((m) => ({ reward: m.reward, success: m.success })),
    hash32('negative-control', seed),
  );
  let next = 0;
  return groups.map((g) => g.map((m) => ({ ...m, ...scores[next++]! })));
}

/** 1 from the first model token on: the tool results and user turns between model turns become trained. */
function afterPrompt(mask: readonly number[]): number[] {
  const first = mask.indexOf(1);
  return mask.map((_, i) => (first >= 0 && i >= first ? 1 : 0));
}

/** 1 on the first run of model tokens only: the model's later turns become untrained. */
function firstRunOnly(mask: readonly number[]): number[] {
  const first = mask.indexOf(1);
  const end = first < 0 ? -1 : mask.indexOf(0, first);
  return mask.map((m, i) => (first >= 0 && i >= first && (end < 0 || i < end) ? m : 0));
}
