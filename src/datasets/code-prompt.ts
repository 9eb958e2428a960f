/**
 * The LiveCodeBench prompt as rLLM builds it for DeepCoder
 * (`rllm/data/utils.py:fetch_live_code_bench_system_prompt`, constants copied from
 * `lcb_runner/prompts/code_generation.py`), so atk's rewards are comparable with theirs.
 */
export const LCB_SYSTEM_MESSAGE_GENERIC =
  'You are an expert Python programmer. You will be given a question (problem specification) and will generate a correct Python program that matches the specification and passes all tests.';
export const LCB_FORMATTING_MESSAGE_WITH_STARTER_CODE =
  'You will use the following starter code to write the solution to the problem and enclose your code within delimiters.';
export const LCB_FORMATTING_WITHOUT_STARTER_CODE =
  'Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.';

/** The user prompt for one coding problem: system message, statement, format note with the starter code or a stdin template. */
export function lcbPrompt(problem: string, starterCode?: string | null): string {
  let prompt = `${LCB_SYSTEM_MESSAGE_GENERIC}\n\n${problem}`;
  if (starterCode) {
    prompt += `### Format: ${LCB_FORMATTING_MESSAGE_WITH_STARTER_CODE}\n`;
    prompt += `\`\`\`python\n${starterCode}\n\`\`\`\n\n`;
  } else {
    prompt += `### Format: ${LCB_FORMATTING_WITHOUT_STARTER_CODE}\n`;
    prompt += '```python\n# YOUR CODE HERE\n```\n\n';
  }
  prompt += '### Answer: (use the provided format with backticks)\n\n';
  return prompt;
}
