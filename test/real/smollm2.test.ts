/**
 * A real pretrained model through atk (npm run test:real, which fetches and imports SmolLM2-135M-Instruct
 * and sets ATK_REAL_MODEL_DIR; without it this file skips): atk doctor passes with the built-in chatml-tools
 * template; the shipped warm start runs as shipped (SFT with LoRA) and the RL recipe, started from that
 * run's checkpoint, a GRPO step with LoRA and an evaluation of a few held-out tasks. Every recorded episode's
 * tokens are what the template renders for its conversation (the drift audit) but where a call was refused
 * or a reply cut off, the model's calls are
 * parsed, the losses are finite and the trainer stays under 3 GB.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../../src/util/paths.js';
import { atkRun, BIN, onlyRun, readJsonl, tempRunsDir } from '../e2e/run-helpers.js';

const MODEL = process.env.ATK_REAL_MODEL_DIR;
const RECIPES = join(projectRoot(), 'recipes');
// The machine this runs on may be shared: a step of a 135M model on 2 busy cores takes minutes.
const LONG = 3 * 3600_000;

interface Episode {
  readonly stats: { readonly toolCalls: number; readonly toolErrors: number; readonly toolErrorsByKind: object };
  readonly failed: boolean;
}

describe.skipIf(!MODEL)('SmolLM2-135M-Instruct imported from its GGUF (npm run test:real)', () => {
  test('returns a passing atk doctor with the chatml-tools template', async () => {
    const doctor = await execa('node', [BIN, 'doctor', MODEL!, '--chat-template', 'chatml-tools'], { reject: false });
    expect(doctor.exitCode).toBe(0);
    expect(doctor.stdout).toMatch(/tool-call format\s+pass\s+smollm2 \(found in the chat template\)/);
    expect(doctor.stdout).toMatch(/4 pass, 0 warn, 0 fail$/);
  });

  test(
    'returns an SFT step and a GRPO step with LoRA and held-out evals: exact tokens, parsed calls, finite losses',
    async () => {
      const runsDir = tempRunsDir();
      const sft = await atkRun(
        [
          join(RECIPES, 'smollm2-calculator-warmstart.yaml'),
          '--no-tui',
          `model.path=${MODEL}`,
          // The warm start as shipped (9 steps): 2 or 6 teach the answer format but no call, and the
          // assertions below need the calls.
        ],
        runsDir,
        LONG,
      );
      expect(sft.exitCode, sft.stderr).toBe(0);
      const warm = onlyRun(runsDir, 'smollm2-calculator-warmstart');
      const sftSteps = readJsonl(join(warm, 'metrics.jsonl')).filter((m) => m.kind === 'train');
      expect(sftSteps.map((m) => Number.isFinite(m['train/loss']))).toStrictEqual(sftSteps.map(() => true));
      expect(sftSteps).toHaveLength(9);
      expect(sft.stdout).toMatch(/step {4}2 {2}loss \d+\.\d{3} {2}token acc \d+\.\d%/);

      const rl = await atkRun(
        [
          join(RECIPES, 'smollm2-calculator.yaml'),
          '--no-tui',
          `model.path=${warm}`,
          'train.steps=1',
          'train.tasks_per_step=2',
          'algorithm.group_size=4',
          'dataset.eval_limit=4',
        ],
        runsDir,
        LONG,
      );
      expect(rl.exitCode, rl.stderr).toBe(0);
      expect(rl.stdout).toContain(`model.path ${warm}: step 9 of ${warm}, LoRA merged`);
      const run = onlyRun(runsDir, 'smollm2-calculator');
      const [step] = readJsonl(join(run, 'metrics.jsonl')).filter((m) => m.kind === 'train');
      expect(step!.episodes).toBe(8);
      if (step!['train/loss'] !== undefined) expect(Number.isFinite(step!['train/loss'])).toBe(true);
      expect(Number(step!['train/peak_rss_mb'] ?? 0)).toBeLessThan(3 * 1024);

      // Every episode of the step and of both evaluations: the tokens recorded are the template's rendering of its
      // conversation, except where a call was refused (below).
      const files = [
        join(run, 'trajectories', 'step-00001.jsonl'),
        ...readdirSync(join(run, 'eval')).map((label) => join(run, 'eval', label, 'results.jsonl')),
      ];
      expect(files).toHaveLength(3);
      const episodes: Episode[] = [];
      for (const file of files) {
        const records = readJsonl(file);
        episodes.push(...(records as unknown as Episode[]));
        for (let i = 0; i < records.length; i++) {
          const audit = await execa('node', [
            BIN,
            'inspect-trajectory',
            file,
            '--episode',
            String(i),
            '--drift',
            '--json',
          ]);
          const report = JSON.parse(audit.stdout) as { drift: { identical: boolean; hunkCount: number } };
          // A call the parser refused (bad JSON: a sampled `"940" * "2"`) is recorded as the model wrote it but
          // re-renders as the call it became (`{}`), and a reply cut off at max_new_tokens may re-render with
          // the turn's closer the model never wrote: the audit may show those places, and no others.
          const refused = (records[i] as unknown as Episode).stats.toolErrorsByKind as Record<string, number>;
          const truncated = (records[i] as { stats: { truncated?: boolean } }).stats.truncated === true;
          const expected = (refused.bad_json ?? 0) + (refused.bad_call ?? 0) + (truncated ? 1 : 0);
          expect(
            expected === 0 ? report.drift.identical : report.drift.hunkCount <= expected,
            `${file} episode ${i}: ${JSON.stringify(report.drift).slice(0, 800)}`,
          ).toBe(true);
        }
      }
      expect(episodes.some((e) => e.failed)).toBe(false);
      // The warm-started model writes calls atk parses: most answered with the calculator's result.
      const calls = episodes.reduce((n, e) => n + e.stats.toolCalls, 0);
      const errors = episodes.reduce((n, e) => n + e.stats.toolErrors, 0);
      expect(calls).toBeGreaterThan(episodes.length / 2);
      expect(errors).toBeLessThan(calls / 2);
    },
    2 * LONG,
  );
});
