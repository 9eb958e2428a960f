import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ProviderError } from '../errors/index.js';
import { uploadThroughTemplate } from './hosts-upload.js';

// The local stand-in of [ssh, "{host}"]: env runs the command here with ATK_HOST set.
const template = ['env', 'ATK_HOST={host}'];

describe('uploadThroughTemplate', () => {
  test('returns the copy under another root, the previous copy removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-upload-'));
    const source = join(dir, 'run', 'sync', 'step-00002');
    mkdirSync(join(source, 'sub'), { recursive: true });
    writeFileSync(join(source, 'adapter_config.json'), '{"r": 8}');
    writeFileSync(join(source, 'sub', 'weights.bin'), 'w2');
    const root = join(dir, 'engine-host');
    mkdirSync(join(root, 'step-00001'), { recursive: true });
    const copy = await uploadThroughTemplate(template, '127.0.0.2', source, root, 'step-00002');
    expect(copy).toBe(join(root, 'step-00002'));
    expect([
      readFileSync(join(copy, 'adapter_config.json'), 'utf8'),
      readFileSync(join(copy, 'sub', 'weights.bin'), 'utf8'),
    ]).toStrictEqual(['{"r": 8}', 'w2']);
    expect(() => readFileSync(join(root, 'step-00001'))).toThrow(/ENOENT/);
  });

  test('rejects a copy the host cannot take, naming the host and the failed part', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-upload-'));
    writeFileSync(join(dir, 'file'), 'x');
    const error = await uploadThroughTemplate(
      template,
      'h2',
      dir,
      join(dir, 'file', 'below-a-file'),
      'step-00001',
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).message).toMatch(
      /^hosts: mkdir -p for the copy of .* to h2:.*below-a-file\/step-00001 failed \(mkdir: .*Not a directory\)$/,
    );
  });
});
