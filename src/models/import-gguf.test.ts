import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { importGguf } from './import-gguf.js';

const tempDir = tempDirs('atk-import-gguf-');
const quiet = (): void => undefined;

// The conversion itself runs in Python (trainer/tests/test_gguf_import.py, and npm run test:real on SmolLM2).
describe('importGguf', () => {
  test('rejects a missing file and an out directory that holds files, before starting Python', async () => {
    const dir = tempDir();
    await expect(importGguf({ file: join(dir, 'missing.gguf'), out: join(dir, 'out'), print: quiet })).rejects.toThrow(
      `${join(dir, 'missing.gguf')}: no such file`,
    );
    writeFileSync(join(dir, 'model.gguf'), 'GGUF');
    mkdirSync(join(dir, 'taken'));
    writeFileSync(join(dir, 'taken', 'config.json'), '{}');
    await expect(importGguf({ file: join(dir, 'model.gguf'), out: join(dir, 'taken'), print: quiet })).rejects.toThrow(
      `${join(dir, 'taken')} already exists and is not an empty directory`,
    );
  });
});
