// Writes the tiny arith model's tokenizer and configs into models/tiny-arith/ (weights come from the
// warm-start recipe): `npx tsx scripts/make-tiny-arith.ts`. Deterministic; rerun after changing the
// chat template or the arith transcripts. The tokenizer and config recipe is scripts/tiny-model.ts.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Template } from '@huggingface/jinja';
import { toChatTools } from '../src/agent/chat-messages.js';
import { ArithOptions, generateArith, type ArithData } from '../src/datasets/arith.js';
import { calculatorTool } from '../src/tools/calculator.js';
import { writeTinyModel } from './tiny-model.js';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'models', 'tiny-arith');
const template = readFileSync(join(dir, 'chat_template.jinja'), 'utf8');
const summary = writeTinyModel({ dir, template, corpus: corpus(), merges: 96, maxPositions: 512 });
process.stdout.write(`models/tiny-arith: ${summary}\n`);

/** Rendered transcripts of every arith level and size. */
function* corpus(): Generator<string> {
  const render = new Template(template);
  const tools = toChatTools([calculatorTool().toolSpec]);
  const tasks = generateArith(
    'train',
    ArithOptions.parse({ levels: ['add', 'sub', 'mul', 'word'], max_digits: 3, train_size: 4000 }),
  );
  for (const task of tasks) {
    yield render.render({ messages: (task.data as ArithData).reference, tools, add_generation_prompt: false });
  }
}
