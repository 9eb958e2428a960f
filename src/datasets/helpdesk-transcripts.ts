import {
  callTool,
  EpisodeDb,
  helpdeskBase,
  helpdeskModel,
  helpdeskTools,
  HelpdeskUser,
  isStopMessage,
  type HelpdeskScenario,
  type TranscriptTurn,
} from '../domains/tau2/index.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import { createRng, hash32 } from '../util/random.js';

/** How often the help-desk teacher of the warm start is sloppy, each a share of the tasks it can happen in. */
export interface HelpdeskSlips {
  /** Copies the order id into its lookup with the last digit changed (a wrong record, or none). */
  readonly wrong_record: number;
  /** Says it is done right after the lookup, having changed nothing. */
  readonly ends_early: number;
  /** Cancels a pending order without asking the user to confirm (so a user who would change their mind cannot). */
  readonly skips_confirm: number;
  /** Tries to cancel a delivered order instead of transferring the user to a human. */
  readonly cancels_delivered: number;
}

/**
 * The warm start's demonstration of one help-desk task: a teacher policy run against the real
 * tools on a fresh database and the real scripted user, so every tool result and user line is one
 * the RL episode would see. Each of the teacher's slips happens on a fixed share of tasks (by
 * hash), so a model imitating it learns to make them about that often: its greedy choice is the
 * majority, while its samples sometimes do better, which is what GRPO learns from.
 */
export function helpdeskTranscript(taskId: string, scenario: HelpdeskScenario, slips: HelpdeskSlips): ChatMessage[] {
  // FNV's top bits barely move with the id's last characters, so hash32 / 2^32 would make neighbouring
  // order ids slip alike (a pattern in the id to memorise instead of the rule); one mulberry32 draw mixes it.
  const slipped = (name: keyof HelpdeskSlips): boolean =>
    createRng(hash32('helpdesk-slip', name, taskId))() < slips[name];
  const user = new HelpdeskUser(scenario, hash32('helpdesk-reference', taskId));
  const db = new EpisodeDb(helpdeskModel, helpdeskBase());
  const messages: ChatMessage[] = [];
  const turns: TranscriptTurn[] = [];
  let calls = 0;
  const hear = (): string => {
    const text = user.reply(turns);
    if (!isStopMessage(text)) {
      messages.push({ role: 'user', content: text });
      turns.push({ role: 'user', text });
    }
    return text;
  };
  const say = (text: string): string => {
    messages.push({ role: 'assistant', content: text });
    turns.push({ role: 'assistant', text });
    return hear();
  };
  const call = (name: string, args: Record<string, unknown>): string => {
    const id = `call_${calls++}`;
    messages.push({
      role: 'assistant',
      content: '',
      tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
    });
    const { output } = callTool(helpdeskTools, db, name, args);
    messages.push({ role: 'tool', content: output, tool_call_id: id, name });
    return output;
  };

  const request = hear();
  const answer = say('What is your order id?');
  const given = /#\d+/.exec(answer)?.[0] ?? '';
  const id = slipped('wrong_record') ? given.slice(0, -1) + String((Number(given.at(-1)) + 1) % 10) : given;
  const record = call('get_order', { order_id: id });
  if (record.startsWith('Error')) return end('Sorry, I cannot find that order.');
  if (slipped('ends_early')) return end('Done.');
  if (!/cancel/.test(request)) {
    const speed = /express/.test(request) ? 'express' : 'standard';
    const changed = call('set_shipping', { order_id: id, speed });
    return end(changed.startsWith('Error') ? 'Sorry, I cannot change it.' : 'Done.');
  }
  if (record.includes('"delivered"') && !slipped('cancels_delivered')) {
    call('transfer_to_human_agents', { summary: 'cancel a delivered order' });
    return end('You are being transferred to a human agent.');
  }
  if (record.includes('"pending"') && !slipped('skips_confirm')) {
    const reply = say('Please confirm the cancellation.');
    if (/instead/.test(reply)) {
      call('set_shipping', { order_id: id, speed: /express/.test(reply) ? 'express' : 'standard' });
      return end('Done.');
    }
  }
  const cancelled = call('cancel_order', { order_id: id });
  return end(cancelled.startsWith('Error') ? 'Sorry, it cannot be cancelled.' : 'Done.');

  /** The teacher's last line; the user answers it with ###STOP###. */
  function end(text: string): ChatMessage[] {
    say(text);
    return messages;
  }
}
