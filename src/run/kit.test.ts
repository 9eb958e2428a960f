import { describe, expect, it } from 'vitest';
import { fillTemplate } from './kit.js';

describe('fillTemplate', () => {
  const task = { id: 't1', prompt: 'What is 2+2?', answer: 4, data: { domain: 'retail', limits: { max: 3 } } };

  it('returns the template with task fields filled in', () => {
    expect(fillTemplate('Task {{id}} in {{ domain }}: {{prompt}} -> {{answer}} {{limits}}', task)).toBe(
      'Task t1 in retail: What is 2+2? -> 4 {"max":3}',
    );
  });

  it('returns unknown placeholders unchanged', () => {
    expect(fillTemplate('Hello {{customer}}', task)).toBe('Hello {{customer}}');
  });
});
