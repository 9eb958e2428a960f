// Synthetic run contents for the viewer benchmarks (bench/view.ts, bench/run-dir.ts): episodes and metrics
// lines shaped like the ones a real arith run records.

/** One arith-like episode: prompt, a calculator call, its result, an answer; ~80 tokens, ~1.5 KB. */
export function episode(step: number, i: number): Record<string, unknown> {
  // Groups of 4 samples of one task; the same groups hold the same tasks at every step, so a task can be followed.
  const group = Math.floor(i / 4);
  const a = (group * 31) % 900;
  const b = (group * 13) % 90;
  const right = (step + i) % 3 !== 0;
  const ids = Array.from({ length: 80 }, (_, k) => 260 + ((k * 7 + i) % 90));
  const model = 32;
  return {
    step,
    group,
    sample: i % 4,
    task_id: `add:${a}+${b}`,
    policy_version: step - 1,
    reward: right ? 1 : 0,
    reward_parts: { correct: right ? 1 : 0, formatted: 1 },
    success: right,
    advantage: right ? 0.5 : -0.5,
    failed: false,
    finish_reason: 'endTurn',
    stats: {
      turns: 2,
      toolCalls: 1,
      toolErrors: 0,
      toolErrorsByKind: {},
      toolCallsByTool: { calculator: 1 },
      toolErrorsByTool: {},
      truncated: false,
      promptTokens: 48,
      generatedTokens: model,
      wallMs: 900,
      engineMs: 800,
    },
    messages: [
      { role: 'user', content: [{ text: `What is ${a} + ${b}?` }] },
      {
        role: 'assistant',
        content: [{ toolUse: { name: 'calculator', toolUseId: 'call_0_0', input: { expression: `${a} + ${b}` } } }],
      },
      {
        role: 'user',
        content: [{ toolResult: { toolUseId: 'call_0_0', status: 'success', content: [{ text: String(a + b) }] } }],
      },
      { role: 'assistant', content: [{ text: `Answer: ${right ? a + b : a + b + 1}` }] },
    ],
    trajectory: {
      format: 'atk.trajectory/1',
      ids,
      segments: [
        ['prompt', 30, 0],
        ['model', 24, 0, step - 1, 'stop'],
        ['tool', 18, 1],
        ['model', 8, 1, step - 1, 'stop'],
      ],
      logprobs: Array.from({ length: model }, (_, k) => -((k * 37) % 100) / 50),
      counters: { turns: 2, toolCalls: 1, toolErrors: 0 },
    },
  };
}

export function metrics(step: number, episodes: number): Record<string, unknown> {
  const p = 1 - Math.exp(-step / 200);
  const figures: Record<string, unknown> = {
    kind: 'train',
    step,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, step * 3)).toISOString(),
    policy_version: step,
    reward_mean: 0.2 + 0.7 * p,
    accuracy: 0.2 + 0.7 * p,
    episodes,
  };
  for (const key of [
    'reward/correct',
    'reward/formatted',
    'tool_calls_per_episode',
    'tool_error_rate',
    'mean_turns',
    'response_tokens_mean',
    'staleness_mean',
    'time_generation_s',
    'time_train_s',
    'time_sync_s',
    'time_step_s',
    'tool_calls/calculator',
    'tool_errors/calculator',
  ])
    figures[key] = Math.abs(Math.sin(step / 17 + key.length));
  for (const key of [
    'loss',
    'entropy',
    'kl',
    'grad_norm',
    'lr',
    'tokens',
    'sequences',
    'clip_fraction',
    'mismatch_mean',
    'mismatch_max',
    'tokens_per_s',
    'seconds',
  ])
    figures[`train/${key}`] = Math.abs(Math.cos(step / 23 + key.length));
  return figures;
}
