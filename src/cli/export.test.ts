import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { writeTinyAdapter, writeTinyModel } from '../__fixtures__/tiny-qwen2.js';
import { InputError } from '../errors/index.js';
import { createRunDir } from '../runs/index.js';
import { builtinChatTemplate } from '../tokens/index.js';
import { projectRoot } from '../util/paths.js';
import { runExport } from './export.js';

const BASE = join(projectRoot(), 'models', 'tiny-arith');
const TOKENIZER_FILES = ['chat_template.jinja', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];

/** A run of the tiny-arith model whose newest checkpoint is a LoRA adapter on q_proj and v_proj. */
async function loraRun(base = BASE): Promise<{ runsDir: string; dir: string }> {
  const runsDir = mkdtempSync(join(tmpdir(), 'atk-export-'));
  const run = await createRunDir({
    runsDir,
    name: 'lora',
    recipeText: 'name: lora\n',
    resolvedYaml: `model:\n  path: ${BASE}\n`,
    seed: 1,
  });
  await writeTinyAdapter(base, run.checkpointDir(2), ['q_proj', 'v_proj']);
  await run.commitCheckpoint(2, 1);
  return { runsDir, dir: run.dir };
}

/** The names of the tensors whose values differ between two safetensors files. */
async function changedTensors(a: string, b: string): Promise<string[]> {
  const script = [
    'import json, sys, torch',
    'from atk_trainer.model.safetensors_io import load_file',
    'a, b = load_file(sys.argv[1]), load_file(sys.argv[2])',
    'assert set(a) == set(b) and all(a[k].dtype == b[k].dtype for k in a)',
    'print(json.dumps(sorted(k for k in a if not torch.equal(a[k], b[k]))))',
  ].join('\n');
  const { stdout } = await execa('/usr/bin/python3', ['-c', script, a, b], {
    env: { PYTHONPATH: join(projectRoot(), 'trainer') },
  });
  return JSON.parse(stdout) as string[];
}

describe('runExport', () => {
  test('returns the adapter directory and the tokenizer of a LoRA run', async () => {
    const { runsDir, dir } = await loraRun();
    const out = join(runsDir, 'out');
    const line = await runExport({ run: dir, out, runsDir });
    expect(readdirSync(out).sort()).toStrictEqual(
      ['adapter_config.json', 'adapter_model.safetensors', ...TOKENIZER_FILES].sort(),
    );
    expect(line).toBe(
      `exported step 2 of ${dir} to ${out} (adapter_config.json, adapter_model.safetensors, ${[
        'tokenizer.json',
        'tokenizer_config.json',
        'generation_config.json',
        'chat_template.jinja',
      ].join(', ')})`,
    );
  });

  test('returns the base model with the adapter merged in, in its layout, with --merge-lora', async () => {
    const { runsDir, dir } = await loraRun();
    const out = join(runsDir, 'merged');
    const line = await runExport({ run: dir, out, runsDir, mergeLora: true });
    expect(readdirSync(out).sort()).toStrictEqual(['config.json', 'model.safetensors', ...TOKENIZER_FILES].sort());
    expect(line).toMatch(
      /^exported step 2 of .* \(config\.json, model\.safetensors, tokenizer\.json, .*; adapter merged\)$/,
    );
    const layers = [0, 1, 2, 3];
    expect(await changedTensors(join(BASE, 'model.safetensors'), join(out, 'model.safetensors'))).toStrictEqual(
      layers.flatMap((i) => ['q', 'v'].map((m) => `model.layers.${i}.self_attn.${m}_proj.weight`)).sort(),
    );
  });

  test('rejects an adapter whose base is gone with the merge’s one line', async () => {
    const gone = writeTinyModel(join(mkdtempSync(join(tmpdir(), 'atk-export-')), 'no-such-base'));
    const { runsDir, dir } = await loraRun(gone);
    rmSync(gone, { recursive: true });
    const merged = runExport({ run: dir, out: join(runsDir, 'merged'), runsDir, mergeLora: true });
    await expect(merged).rejects.toThrow(InputError);
    await expect(merged).rejects.toThrow(
      /^merge_lora: .*adapter_config\.json: base_model_name_or_path '.*no-such-base' is not a model directory with config\.json$/,
    );
  });

  test("returns the run's model.chat_template as the exported model's template", async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'atk-export-'));
    const template = builtinChatTemplate('chatml-tools')!;
    const run = await createRunDir({
      runsDir,
      name: 'templated',
      recipeText: 'name: templated\n',
      resolvedYaml: `model:\n  path: ${BASE}\n  chat_template: ${template}\n`,
      seed: 1,
    });
    await writeTinyAdapter(BASE, run.checkpointDir(1), ['q_proj']);
    await run.commitCheckpoint(1, 1);
    const out = join(runsDir, 'out');
    const line = await runExport({ run: run.dir, out, runsDir });
    const text = readFileSync(template, 'utf8');
    expect(JSON.parse(readFileSync(join(out, 'tokenizer_config.json'), 'utf8')).chat_template).toBe(text);
    expect(readFileSync(join(out, 'chat_template.jinja'), 'utf8')).toBe(text);
    expect(line).toMatch(/, chat template chatml-tools\.jinja\)$/);
    // the source model keeps its own
    expect(readFileSync(join(BASE, 'chat_template.jinja'), 'utf8')).not.toBe(text);
  });
});
