import type { ChatMessage } from '../tokens/chat-types.js';
import { calculate } from '../util/calculator-eval.js';

/** What a transcript needs from a problem: the question and the expression the calculator gets. */
export interface ArithProblemText {
  readonly prompt: string;
  readonly expression: string;
}

/**
 * The perfect tool-using conversation for one problem, as chat messages for the model's template:
 * the question; a calculator call with the expression; the calculator's output exactly as the
 * `calculator` tool returns it during RL; and `Answer: N`. It is what the `sft` warm start trains
 * on (`task.data.reference`), so the model learns the very layout it is later scored on.
 */
export function arithTranscript(problem: ArithProblemText): ChatMessage[] {
  const result = calculate(problem.expression);
  return [
    { role: 'user', content: problem.prompt },
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        {
          id: 'call_0',
          type: 'function',
          function: { name: 'calculator', arguments: { expression: problem.expression } },
        },
      ],
    },
    { role: 'tool', content: result, tool_call_id: 'call_0', name: 'calculator' },
    { role: 'assistant', content: `Answer: ${result}` },
  ];
}
