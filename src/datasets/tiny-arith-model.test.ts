import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, test } from 'vitest';
import { toChatTools } from '../agent/chat-messages.js';
import { referenceTrajectory } from '../rollout/reference.js';
import { hermesParser, incrementalRenderer, loadModelTokenizer } from '../tokens/index.js';
import { calculatorTool } from '../tools/calculator.js';
import { projectRoot } from '../util/paths.js';
import { ArithOptions, generateArith, type ArithData } from './arith.js';
import { arithTranscript } from './arith-transcripts.js';

// The embedded default model's tokenizer and configs (weights come from the warm-start recipe).
const dir = join(projectRoot(), 'models', 'tiny-arith');
const json = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown>;
const tokenizerJson = json('tokenizer.json');
const tokenizerConfig = json('tokenizer_config.json');
const config = json('config.json');
const tools = toChatTools([calculatorTool().toolSpec]);

const EXPECTED_TRANSCRIPT =
  '<|im_start|>system\nTools: calculator(expression)<|im_end|>\n' +
  '<|im_start|>user\nWhat is 12 + 30?<|im_end|>\n' +
  '<|im_start|>assistant\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "12 + 30"}}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n' +
  '<|im_start|>assistant\nAnswer: 42<|im_end|>\n';

describe('models/tiny-arith tokenizer.json', () => {
  const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);

  test('returns the original text after encode and decode, for any bytes', () => {
    for (const text of [
      'What is 987 * 654?',
      'Answer: -1,234.5',
      'naïve café — 数学 🧮',
      '\t tabs\n\nand  spaces ',
      '<|im_start|>user\nhi<|im_end|>',
    ]) {
      const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
      expect(tokenizer.decode(ids, { skip_special_tokens: false })).toBe(text);
    }
  });

  test('returns one id per special token and one token per digit', () => {
    const specials = [
      '<|endoftext|>',
      '<|im_start|>',
      '<|im_end|>',
      '<tool_call>',
      '</tool_call>',
      '<tool_response>',
      '</tool_response>',
    ];
    expect(specials.map((s) => tokenizer.encode(s, { add_special_tokens: false }).ids.length)).toStrictEqual(
      specials.map(() => 1),
    );
    expect(tokenizer.encode('1234567890', { add_special_tokens: false }).ids).toHaveLength(10);
  });

  test('returns a vocabulary of contiguous ids whose size is config.json vocab_size', () => {
    const model = tokenizerJson.model as { vocab: Record<string, number> };
    const added = tokenizerJson.added_tokens as { id: number }[];
    const ids = [...Object.values(model.vocab), ...added.map((t) => t.id)].sort((a, b) => a - b);
    expect(ids).toStrictEqual(Array.from({ length: ids.length }, (_, i) => i));
    expect(config.vocab_size).toBe(ids.length);
  });
});

describe('models/tiny-arith chat template', () => {
  test('returns the exact ChatML transcript with a one-line tool list and Hermes calls', () => {
    const template = new Template(tokenizerConfig.chat_template as string);
    const messages = arithTranscript({ prompt: 'What is 12 + 30?', expression: '12 + 30' });
    expect(template.render({ messages, tools, add_generation_prompt: false })).toBe(EXPECTED_TRANSCRIPT);
  });

  test('returns a system turn only when there is a system message or tools', () => {
    const template = new Template(tokenizerConfig.chat_template as string);
    const user = { role: 'user', content: 'hi' };
    expect(template.render({ messages: [user], add_generation_prompt: true })).toBe(
      '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(
      template.render({
        messages: [{ role: 'system', content: 'Be brief.' }, user],
        tools,
        add_generation_prompt: false,
      }),
    ).toBe('<|im_start|>system\nBe brief.\nTools: calculator(expression)<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n');
  });

  test('returns several tools, calls and merged tool results as Qwen2.5 does', () => {
    const template = new Template(tokenizerConfig.chat_template as string);
    const two = [
      ...tools,
      {
        type: 'function',
        function: {
          name: 'lookup',
          description: 'd',
          parameters: { type: 'object', properties: { city: {}, day: {} } },
        },
      },
    ];
    const messages = [
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: 'Two calls.',
        tool_calls: [
          { type: 'function', function: { name: 'calculator', arguments: { expression: '1+1' } } },
          { type: 'function', function: { name: 'lookup', arguments: '{"city": "Oslo"}' } },
        ],
      },
      { role: 'tool', content: '2' },
      { role: 'tool', content: 'sunny' },
    ];
    expect(template.render({ messages, tools: two, add_generation_prompt: true })).toBe(
      '<|im_start|>system\nTools: calculator(expression); lookup(city, day)<|im_end|>\n<|im_start|>user\nq<|im_end|>\n' +
        '<|im_start|>assistant\nTwo calls.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "1+1"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "lookup", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\n2\n</tool_response>\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  test('returns the same template in tokenizer_config.json as in chat_template.jinja', () => {
    expect(tokenizerConfig.chat_template).toBe(readFileSync(join(dir, 'chat_template.jinja'), 'utf8'));
  });
});

describe('models/tiny-arith with loadModelTokenizer', () => {
  test('returns eos ids for <|im_end|> and <|endoftext|> and renders the transcript', async () => {
    const tokenizer = await loadModelTokenizer(dir);
    expect(tokenizer.eosTokenIds).toStrictEqual([
      tokenizer.tokenToId('<|im_end|>'),
      tokenizer.tokenToId('<|endoftext|>'),
    ]);
    const messages = arithTranscript({ prompt: 'What is 12 + 30?', expression: '12 + 30' });
    expect(tokenizer.renderChat(messages, { tools })).toBe(EXPECTED_TRANSCRIPT);
  });

  test('returns reference trajectories under 120 tokens whose model part the Hermes parser reads back', async () => {
    const tokenizer = await loadModelTokenizer(dir);
    const tasks = generateArith(
      'test',
      ArithOptions.parse({ levels: ['add', 'sub', 'mul', 'word'], max_digits: 3, test_size: 200 }),
    );
    for (const task of tasks) {
      const trajectory = referenceTrajectory(tokenizer, (task.data as ArithData).reference, tools);
      expect(tokenizer.decode(trajectory.ids)).toBe(
        tokenizer.renderChat((task.data as ArithData).reference, { tools }).trimEnd(),
      );
      expect(trajectory.length).toBeLessThan(120);
    }
    const [first] = tasks;
    const firstTurn = tokenizer.decode(referenceTrajectory(tokenizer, (first!.data as ArithData).reference, tools).ids);
    const call = /<\|im_start\|>assistant\n(<tool_call>[\s\S]*?<\/tool_call>)/.exec(firstTurn)![1]!;
    expect(hermesParser.parse(call).calls).toStrictEqual([
      { ok: true, name: 'calculator', arguments: { expression: (first!.data as ArithData).expression }, raw: call },
    ]);
  });

  test('returns a typical transcript of at most 80 tokens, the tool-call markup merged into few tokens', async () => {
    const tokenizer = await loadModelTokenizer(dir);
    const messages = arithTranscript({ prompt: 'What is 12 + 30?', expression: '12 + 30' });
    expect(tokenizer.encode(EXPECTED_TRANSCRIPT).length).toBeLessThanOrEqual(80);
    expect(tokenizer.encode('{"name": "calculator", "arguments": {"expression": "').length).toBeLessThanOrEqual(16);
    expect(incrementalRenderer(tokenizer).initial(messages.slice(0, 1), tools).length).toBeLessThanOrEqual(30);
  });
});
