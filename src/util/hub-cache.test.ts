import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { hubCacheDir, hubSnapshotDir } from './hub-cache.js';

function cache(): string {
  const root = mkdtempSync(join(tmpdir(), 'atk-hub-'));
  const repo = join(root, 'models--Qwen--Qwen2.5-1.5B-Instruct');
  for (const hash of ['aaa111', 'bbb222']) {
    mkdirSync(join(repo, 'snapshots', hash), { recursive: true });
    writeFileSync(join(repo, 'snapshots', hash, 'config.json'), '{}');
  }
  mkdirSync(join(repo, 'refs'));
  writeFileSync(join(repo, 'refs', 'main'), 'bbb222\n');
  return root;
}

describe('hubSnapshotDir', () => {
  test('returns the snapshot refs/main names in the cache $HF_HUB_CACHE points at', () => {
    const root = cache();
    expect(hubSnapshotDir('Qwen/Qwen2.5-1.5B-Instruct', { HF_HUB_CACHE: root })).toBe(
      join(root, 'models--Qwen--Qwen2.5-1.5B-Instruct', 'snapshots', 'bbb222'),
    );
  });

  test('returns undefined for a model not in the cache and for something that is not a hub id', () => {
    const root = cache();
    expect([
      hubSnapshotDir('Qwen/Qwen3-8B', { HF_HUB_CACHE: root }),
      hubSnapshotDir('../models/tiny', { HF_HUB_CACHE: root }),
    ]).toStrictEqual([undefined, undefined]);
  });

  test('returns the cache under $HF_HOME, else under ~/.cache', () => {
    expect(hubCacheDir({ HF_HOME: '/data/hf' })).toBe('/data/hf/hub');
    expect(hubCacheDir({ XDG_CACHE_HOME: '/x' })).toBe('/x/huggingface/hub');
  });
});
