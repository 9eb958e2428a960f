import { createRng, hash32 } from '../../util/random.js';
import type { TranscriptTurn } from './evaluator.js';
import { STOP_TOKENS, type UserSimulator } from './user-simulator.js';

/** What a help-desk customer wants, and what they hold back until asked. */
export interface HelpdeskScenario {
  /** cancel, cancel_then_shipping (changes their mind when asked to confirm), shipping, cancel_delivered. */
  readonly kind: HelpdeskTaskKind;
  readonly order_id: string;
  /** The shipping speed asked for (shipping) or switched to instead (cancel_then_shipping). */
  readonly speed?: string;
}

export const HELPDESK_TASK_KINDS = ['cancel', 'cancel_then_shipping', 'shipping', 'cancel_delivered'] as const;
export type HelpdeskTaskKind = (typeof HELPDESK_TASK_KINDS)[number];

/**
 * A scripted help-desk customer: deterministic given its seed, which only picks the wording. It
 * opens with its request but not the order id, gives the id only when the agent asks for it
 * ("order id"), answers a request to confirm with yes (or, in a cancel_then_shipping task, by
 * changing its mind the first time), and ends the conversation (###STOP###) on anything else.
 */
export class HelpdeskUser implements UserSimulator {
  private readonly rng: () => number;

  constructor(
    private readonly scenario: HelpdeskScenario,
    seed: number,
  ) {
    this.rng = createRng(hash32('helpdesk-user', seed, scenario.kind, scenario.order_id));
  }

  respond(conversation: readonly TranscriptTurn[]): Promise<string> {
    return Promise.resolve(this.reply(conversation));
  }

  /** The next message, synchronously (the warm-start transcripts are written with it). */
  reply(conversation: readonly TranscriptTurn[]): string {
    const { kind, order_id: id, speed } = this.scenario;
    const said = conversation.filter((t) => t.role === 'user');
    if (said.length === 0) {
      return kind === 'shipping'
        ? this.pick([`I want ${speed} shipping for my order.`, `Please switch my order to ${speed} shipping.`])
        : this.pick(['I want to cancel my order.', 'Please cancel my order.']);
    }
    const agent = conversation.at(-1)?.role === 'assistant' ? conversation.at(-1)!.text : '';
    if (/order (id|number)/i.test(agent)) return this.pick([`It is ${id}.`, `My order id is ${id}.`]);
    if (/confirm/i.test(agent)) {
      const changedMind = said.some((t) => t.text.includes('instead'));
      if (kind === 'cancel_then_shipping' && !changedMind) return `No, wait. Switch it to ${speed} shipping instead.`;
      return this.pick(['Yes, please.', 'Yes.']);
    }
    return STOP_TOKENS[0];
  }

  private pick(options: readonly string[]): string {
    return options[Math.floor(this.rng() * options.length)]!;
  }
}
