import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runAtk } from '../__fixtures__/atk-process.js';
import { embeddedVllmCommand } from '../__fixtures__/engine-processes.js';
import { writeModelWithWeights } from '../__fixtures__/tiny-qwen2.js';
import { projectRoot } from '../util/paths.js';

// A node's /tmp, where an upload to it lands (the path is literal, not $TMPDIR); here the node is this machine.
const NODE_TMP = '/tmp';

// The hosts launcher with a command template that runs locally ([env, "ATK_HOST={host}"] in place of
// [ssh, "{host}"]): the trainer on "host" 127.0.0.1, the engine replica bound to 127.0.0.2, both
// requiring the run's token, which every atk client must then send. Without cluster.shared_dir each
// step's adapter goes to the engine host through the same template (rm, mkdir, tar -c | tar -x).
describe('atk run with the hosts launcher', () => {
  test('returns a finished run with the trainer and the engine on their hosts, both guarded by the run token, the adapter uploaded through the template', async () => {
    const started = Date.now();
    const dir = mkdtempSync(join(tmpdir(), 'atk-hosts-'));
    const model = await writeModelWithWeights(join(dir, 'model'), join(projectRoot(), 'models', 'tiny-arith'));
    const recipe = join(dir, 'hosts.yaml');
    writeFileSync(
      recipe,
      [
        'name: hosts',
        `extends: ${join(projectRoot(), 'recipes', 'smoke', 'quickstart.yaml')}`,
        'cluster: {launcher: hosts, hosts: ["127.0.0.[1-2]"], command: [env, "ATK_HOST={host}"]}',
        'model:',
        `  path: ${model}`,
        `  engine: {kind: vllm, command: ${JSON.stringify(embeddedVllmCommand)}, startup_timeout_s: 120}`,
        '  trainer: {device: cpu}',
        'algorithm: {name: sft, lora: {rank: 8, alpha: 16}}',
        'train: {steps: 2, eval_before: false, eval_after: false}',
      ].join('\n'),
    );
    const result = await runAtk(['run', recipe, `output.runs_dir=${join(dir, 'runs')}`], {
      cwd: dir,
      env: { ATK_RUN_TOKEN: '' },
    });
    expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
    const run = join(dir, 'runs', 'hosts', 'v001');
    const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { policy_version: number; time_sync_s: number });
    expect(steps.map((s) => [s.policy_version, s.time_sync_s > 0])).toStrictEqual([
      [1, true],
      [2, true],
    ]);
    expect(readFileSync(join(run, 'manifest.json'), 'utf8').replace(/\s/g, '')).toContain(
      '"trainer_nodes":["127.0.0.1"],"engine_nodes":["127.0.0.2"]',
    );
    const engineLog = readFileSync(join(run, 'logs', 'engine.log'), 'utf8');
    expect([
      engineLog.includes('"ATK_HOST": "127.0.0.2"'),
      engineLog.includes('requests need the per-run token'),
      /, on 127\.0\.0\.2:\d+\n/.test(engineLog),
    ]).toStrictEqual([true, true, true]);
    expect(readFileSync(join(run, 'logs', 'trainer.log'), 'utf8')).toContain('requests need the per-run token');
    // The engine host's copy (its /tmp, here this machine's): the last step's adapter, the previous copy removed.
    const copies = readdirSync(NODE_TMP)
      .filter((d) => /^atk-sync-\d+-r0$/.test(d))
      .map((d) => join(NODE_TMP, d))
      .filter((d) => statSync(d).mtimeMs >= started);
    try {
      expect(copies.map((d) => readdirSync(d))).toStrictEqual([['step-00002']]);
      expect(readdirSync(join(copies[0]!, 'step-00002')).sort()).toStrictEqual([
        'adapter_config.json',
        'adapter_model.safetensors',
      ]);
    } finally {
      for (const d of copies) rmSync(d, { recursive: true, force: true });
    }
  }, 300_000);
});
