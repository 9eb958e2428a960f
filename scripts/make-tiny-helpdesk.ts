// Writes the tiny help-desk model's tokenizer and configs into models/tiny-helpdesk/ (weights come
// from recipes/tiny/helpdesk-warmstart.yaml): `npx tsx scripts/make-tiny-helpdesk.ts`. The chat
// template is tiny-arith's (its one-line tool list keeps the prompt short); the merges are learnt from
// rendered help-desk conversations. Deterministic; the recipe is scripts/tiny-model.ts.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Template } from '@huggingface/jinja';
import { toChatTools } from '../src/agent/chat-messages.js';
import { generateHelpdesk, HelpdeskOptions } from '../src/datasets/helpdesk.js';
import {
  EpisodeDb,
  HELPDESK_POLICY,
  helpdeskBase,
  helpdeskModel,
  helpdeskTools,
  strandsTools,
} from '../src/domains/tau2/index.js';
import type { ChatMessage } from '../src/tokens/chat-types.js';
import { writeTinyModel } from './tiny-model.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'models');
const dir = join(root, 'tiny-helpdesk');
const template = readFileSync(join(root, 'tiny-arith', 'chat_template.jinja'), 'utf8');
/** Enough merges for every fixed word of the policy, tools and replies to be one token. */
const MERGES = 320;
/** As wide as tiny-arith, whose transformer the warm start starts from (scripts/tiny-helpdesk-init.py). */
const HIDDEN = 128;
const summary = writeTinyModel({ dir, template, corpus: corpus(), merges: MERGES, maxPositions: 1024, hidden: HIDDEN });
process.stdout.write(`models/tiny-helpdesk: ${summary}\n`);

/** Rendered train conversations, with the warm start's slips so their wrong turns share its tokens. */
function* corpus(): Generator<string> {
  const render = new Template(template);
  const tools = toChatTools(
    strandsTools(helpdeskTools, new EpisodeDb(helpdeskModel, helpdeskBase())).map((t) => t.toolSpec),
  );
  const options = HelpdeskOptions.parse({
    reference_slips: { wrong_record: 0.2, ends_early: 0.1, skips_confirm: 0.5, cancels_delivered: 0.5 },
  });
  for (const task of generateHelpdesk('train', options)) {
    const messages: ChatMessage[] = [
      { role: 'system', content: HELPDESK_POLICY },
      ...(task.data.reference as ChatMessage[]),
    ];
    yield render.render({ messages, tools, add_generation_prompt: false });
  }
}
