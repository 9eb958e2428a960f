import type { ChatMessage, ChatTool } from './chat-types.js';
import { auditDrift, type DriftReport } from './drift.js';
import { incrementalRenderer, probeTemplate } from './incremental-render.js';
import type { ModelTokenizer } from './model-tokenizer.js';
import { parseReply } from './reply-markers.js';
import { detectToolCallFormat, resolveToolCallFormat } from './tool-call-format.js';
import { toolCallParsers } from './tool-calls/index.js';
import type { ParsedToolCall } from './tool-calls/types.js';
import { TokenTrajectory } from './trajectory.js';

/** What a model's chat template does with a sample tool-using conversation (`atk doctor <model>`). */
export interface TemplateCheck {
  /** The format used, and whether `auto` found it in the template or it was given. */
  readonly format: string;
  readonly detected: boolean;
  /** Whether the rendered prompt lists the sample tool (its name and a parameter appear in it). */
  readonly listsTools: boolean;
  /** The sample call as the model writes it, and what parsing the reply's tokens gave back. */
  readonly reply: string;
  readonly parsed: readonly ParsedToolCall[];
  /** Whether exactly the sample call came back. */
  readonly parsedBack: boolean;
  /** The drift audit of the whole sample (prompt, call, tool result, answer) against its incremental render. */
  readonly drift: DriftReport;
}

/** The sample: one tool, a question, one call, its result, an answer. */
const SAMPLE_TOOL: ChatTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' } },
      required: ['city'],
    },
  },
};
const SAMPLE_CALL = { name: 'get_weather', arguments: { city: 'Paris', days: 2 } };
const SAMPLE_RESULT = '{"temperature_c": 21, "sky": "clear"}';
const SAMPLE_ANSWER = 'It is 21 degrees and clear in Paris.';

/**
 * Renders a sample conversation with a tool call and a tool result through the model's template the way
 * an episode does (the prompt once, the model's tokens as generated, then only what the environment
 * adds), parses the call back from the reply's tokens, and audits the history for drift: whether the
 * template, rendering the finished conversation, gives the tokens the episode recorded. Costs no compute.
 * @throws InputError naming agent.tool_call_format when `format` is auto and the template writes no format atk parses.
 * @throws Error when the template itself fails to render the sample.
 */
export function checkChatTemplate(
  tokenizer: ModelTokenizer,
  format: string,
  kwargs: Readonly<Record<string, unknown>> = {},
): TemplateCheck {
  const resolved = resolveToolCallFormat(format, tokenizer);
  const parser = toolCallParsers[resolved]!;
  const renderer = incrementalRenderer(tokenizer, kwargs);
  const stop = probeTemplate(tokenizer, kwargs).stopToken ?? tokenizer.eosTokenIds[0];
  const stopIds = stop === undefined ? [] : [stop];
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: 'What is the weather in Paris?' },
  ];
  const trajectory = new TokenTrajectory();
  const prompt = renderer.initial(messages, [SAMPLE_TOOL]);
  trajectory.appendEnvironment('prompt', prompt, 0);
  const promptText = tokenizer.decode(prompt);

  const reply = parser.renderCalls([SAMPLE_CALL]);
  const replyIds = tokenizer.encode(reply);
  // A format whose call ends on a stop token of its own (harmony's <|call|>) needs no other.
  const callIds = tokenizer.eosTokenIds.includes(replyIds.at(-1)!) ? replyIds : replyIds.concat(stopIds);
  trajectory.appendModel(
    callIds,
    callIds.map(() => 0),
    0,
    0,
    'stop',
  );
  const parsed = parseReply(tokenizer, parser, replyIds, tokenizer.decode(replyIds), { tools: [SAMPLE_TOOL] }).calls;

  const callMessage: ChatMessage = {
    role: 'assistant',
    content: '',
    tool_calls: [{ id: 'call_0', type: 'function', function: SAMPLE_CALL }],
  };
  const toolMessage: ChatMessage = { role: 'tool', content: SAMPLE_RESULT, tool_call_id: 'call_0' };
  trajectory.appendEnvironment('tool', renderer.continuation(callIds.at(-1), [toolMessage], callMessage), 1);
  const answerIds = tokenizer.encode(SAMPLE_ANSWER).concat(stopIds);
  trajectory.appendModel(
    answerIds,
    answerIds.map(() => 0),
    1,
    0,
    'stop',
  );
  const conversation: ChatMessage[] = [
    ...messages,
    callMessage,
    toolMessage,
    { role: 'assistant', content: SAMPLE_ANSWER },
  ];
  const drift = auditDrift({
    tokenizer,
    trajectory,
    messages: conversation,
    tools: [SAMPLE_TOOL],
    chatTemplateKwargs: kwargs,
  });
  const first = parsed[0];
  return {
    format: resolved,
    detected: format === 'auto' && detectToolCallFormat(tokenizer.chatTemplates)?.format === resolved,
    listsTools: promptText.includes(SAMPLE_TOOL.function.name) && promptText.includes('city'),
    reply,
    parsed,
    parsedBack:
      parsed.length === 1 &&
      first?.ok === true &&
      first.name === SAMPLE_CALL.name &&
      JSON.stringify(first.arguments) === JSON.stringify(SAMPLE_CALL.arguments),
    drift,
  };
}
