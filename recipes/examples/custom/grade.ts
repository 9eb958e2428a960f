// Reward for custom.yaml: called once per finished episode; return a number or a record of named parts
// (each part is logged; the score is their sum unless the record has a `score`).
interface Outcome {
  readonly task: { readonly answer?: unknown; readonly data: Record<string, unknown> };
  readonly finalText: string;
  readonly toolCalls: readonly { readonly name: string; readonly status: 'success' | 'error' }[];
}

export function grade(outcome: Outcome): Record<string, number> {
  const numbers = outcome.finalText.replace(/,/g, '').match(/-?\d+(\.\d+)?/g) ?? [];
  const correct = numbers.length > 0 && Number(numbers.at(-1)) === Number(outcome.task.answer) ? 1 : 0;
  const usedCalculator = outcome.toolCalls.some((call) => call.name === 'calculator' && call.status === 'success') ? 0.1 : 0;
  return { correct, used_calculator: usedCalculator };
}
