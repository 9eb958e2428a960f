import { z } from 'zod';
import {
  HELPDESK_POLICY,
  HELPDESK_TASK_KINDS,
  helpdeskBase,
  HelpdeskUser,
  SHIPPING_SPEEDS,
  TAU2_TERMINATION_KEY,
  type HelpdeskScenario,
  type Tau2Task,
} from '../domains/tau2/index.js';
import { InputError } from '../errors/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import { hash32, shuffled } from '../util/random.js';
import { helpdeskTranscript } from './helpdesk-transcripts.js';
import type { DatasetDefinition, Task, UserSimulationHooks } from './types.js';

const share = (what: string) => z.number().min(0).max(1).default(0).describe(what);

export const HelpdeskOptions = z.strictObject({
  test_fraction: z
    .number()
    .gt(0)
    .lt(1)
    .default(0.2)
    .describe('Share of the orders held out for test, chosen by a hash of the order id.'),
  references_per_order: z
    .number()
    .int()
    .min(1)
    .default(1)
    .describe(
      "Train tasks per order for the sft warm start, each with its own draw of the slips and the customer's wording (task ids gain /k), so a model must read the request and the record to imitate them rather than remember what each order id got.",
    ),
  reference_slips: z
    .strictObject({
      wrong_record: share('Demonstrations whose lookup copies the order id with its last digit changed.'),
      ends_early: share('Demonstrations that say "Done." right after the lookup.'),
      skips_confirm: share('Demonstrations of a pending cancellation that cancel without asking to confirm.'),
      cancels_delivered: share('Demonstrations of a delivered order that try to cancel it instead of transferring.'),
    })
    .prefault({})
    .describe(
      'How often the teacher of the sft warm start (task.data.reference) is sloppy, each a share of the tasks where it can be; prompts, users and rewards are unchanged.',
    ),
});
export type HelpdeskOptions = z.infer<typeof HelpdeskOptions>;

/**
 * Dataset `helpdesk`: one task per order of the generated help-desk database (splits `train` and
 * `test`, by a hash of the order id, so no held-out order id is ever trained on). A pending order's
 * customer wants it cancelled, cancelled until asked to confirm (then switched to the other shipping
 * speed), or switched to the other speed; a delivered order's customer wants it cancelled, which the
 * policy sends to a human. Success is tau2's: the final database equals the one the gold actions
 * make (and, for a delivered order, the transfer was called). Run it with the `tau2` tools and
 * reward (`domain: helpdesk`) and `user: {kind: scripted}`, which plays {@link HelpdeskUser}.
 * @throws InputError for a split other than train/test; ConfigError for bad options.
 */
export const helpdeskDataset: DatasetDefinition = {
  name: 'helpdesk',
  options: HelpdeskOptions,
  systemPrompt: HELPDESK_POLICY,
  userSimulation: helpdeskUserSimulation(),
  async load(split, ctx): Promise<Task[]> {
    if (split !== 'train' && split !== 'test')
      throw new InputError(`dataset helpdesk has splits train and test, not '${split}'`);
    return generateHelpdesk(split, parseComponentOptions(HelpdeskOptions, ctx.options, 'dataset.options'));
  },
};

/** The tasks of one split, a pure function of the options, in a fixed mixed order (so eval_limit takes every kind). */
export function generateHelpdesk(split: 'train' | 'test', options: HelpdeskOptions): Task[] {
  const tasks: Task[] = [];
  for (const record of Object.values(helpdeskBase().orders!)) {
    const id = record.order_id as string;
    if ((hash32('helpdesk-split', id) / 2 ** 32 < options.test_fraction ? 'test' : 'train') !== split) continue;
    const scenario = scenarioOf(id, record.status as string, record.shipping as string);
    const copies = split === 'train' ? options.references_per_order : 1;
    for (let k = 0; k < copies; k++) {
      const taskId = copies === 1 ? `${scenario.kind}:${id}` : `${scenario.kind}:${id}/${k}`;
      tasks.push({
        id: taskId,
        prompt: '',
        data: {
          scenario,
          tau2: tau2Task(taskId, scenario),
          reference: helpdeskTranscript(taskId, scenario, options.reference_slips),
        },
      });
    }
  }
  return shuffled(tasks, hash32('helpdesk-order', split));
}

/** A pending order gets one of three requests by hash; a delivered one is always a cancellation. */
function scenarioOf(id: string, status: string, shipping: string): HelpdeskScenario {
  const other = SHIPPING_SPEEDS.find((s) => s !== shipping)!;
  if (status === 'delivered') return { kind: 'cancel_delivered', order_id: id };
  const kind = HELPDESK_TASK_KINDS[hash32('helpdesk-kind', id) % 3]!;
  return kind === 'cancel' ? { kind, order_id: id } : { kind, order_id: id, speed: other };
}

/** The task as tau2's evaluator reads it: gold actions and the reward basis. */
function tau2Task(id: string, scenario: HelpdeskScenario): Tau2Task {
  const { kind, order_id, speed } = scenario;
  const action = (name: string, args: Record<string, unknown>, compare?: string[]) => ({
    action_id: `${id}-0`,
    requestor: 'assistant' as const,
    name,
    arguments: args,
    ...(compare ? { compare_args: compare } : {}),
  });
  const actions =
    kind === 'cancel'
      ? [action('cancel_order', { order_id })]
      : kind === 'cancel_delivered'
        ? [action('transfer_to_human_agents', { summary: 'cancel a delivered order' }, [])]
        : [action('set_shipping', { order_id, speed })];
  return {
    id,
    user_scenario: { instructions: `You want to ${kind.replaceAll('_', ' ')} order ${order_id}.` },
    evaluation_criteria: { actions, reward_basis: kind === 'cancel_delivered' ? ['DB', 'ACTION'] : ['DB'] },
  };
}

/**
 * The help-desk customer of `user: {kind: scripted}` is {@link HelpdeskUser}, seeded by the run seed
 * and the episode; the ending is recorded where the `tau2` reward reads it, as for tau2.
 */
function helpdeskUserSimulation(): UserSimulationHooks {
  return {
    scriptedUser: (task, seed) => new HelpdeskUser(task.data.scenario as HelpdeskScenario, seed),
    onEnd: (end, env) => void env.state.set(TAU2_TERMINATION_KEY, end),
  };
}
