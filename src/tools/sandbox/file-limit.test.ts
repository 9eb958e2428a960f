import { describe, expect, test } from 'vitest';
import { CodeTestsOptionsSchema, scoreCode } from '../../rewards/code-tests.js';
import type { EpisodeOutcome } from '../../rewards/types.js';
import { formatRun } from '../run-python.js';
import { SandboxPool } from './index.js';

// CPython ignores SIGXFSZ: a program past RLIMIT_FSIZE sees EFBIG and dies of the OSError, so the
// limit shows only in its stderr.
const pool = new SandboxPool({ size: 1 });
const WRITE_3_MB =
  "with open('big.bin', 'wb') as f:\n    for _ in range(3):\n        f.write(b'x' * 1024 * 1024)\n        f.flush()\n";

describe('sandbox (file-size limit)', () => {
  test('returns file_limit, not runtime_error, for a program that writes past the file-size limit', async () => {
    const result = await pool.run({ code: WRITE_3_MB, limits: { fileMb: 1, wallMs: 10_000 } });
    expect([result.status, result.exitCode]).toStrictEqual(['file_limit', 1]);
    expect(result.stderr).toContain('OSError: [Errno 27] File too large');
    expect(formatRun(result, { fileMb: 1 }, 200).split('\n')[0]).toBe(
      'status: file_limit (a file grew past the limit of 1 MB)',
    );
  });

  test('returns the file-size limit as the code reward verdict', async () => {
    const task = { id: 'fill', prompt: 'Print x.', data: { tests: [{ kind: 'stdin', input: '', output: 'x' }] } };
    const code =
      "with open('big.bin', 'wb') as f:\n    while True:\n        f.write(b'x' * 1024 * 1024)\n        f.flush()\n";
    const outcome: EpisodeOutcome = {
      task,
      finalText: `\`\`\`python\n${code}\`\`\`\n`,
      messages: [],
      toolCalls: [],
      finishReason: 'endTurn',
      env: { episodeId: 'e', task, state: new Map(), signal: new AbortController().signal },
    };
    const scored = await scoreCode(outcome, CodeTestsOptionsSchema.parse({ timeout_per_test_s: 5 }), pool);
    expect(scored).toStrictEqual({
      score: 0,
      parts: { passed: 0, total: 1 },
      info: { failures: [{ test: 0, kind: 'file_limit', detail: 'file size limit exceeded' }] },
    });
  });
});
