import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { arch, cpus, hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../util/paths.js';
import { atkVersion, buildManifest, sha256 } from './manifest.js';

const root = mkdtempSync(join(tmpdir(), 'atk-manifest-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const facts = { name: 'demo', version: 'v001', seed: 3, resolvedYaml: 'name: demo\n' };

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim();
}

describe('buildManifest', () => {
  test('returns no git state outside a repository, and no recipe_file or command keys when not given', async () => {
    const dir = join(root, 'plain');
    mkdirSync(dir);
    const manifest = await buildManifest({ ...facts, cwd: dir });
    expect([manifest.git, 'recipe_file' in manifest, 'command' in manifest]).toStrictEqual([null, false, false]);
    expect(manifest.host).toStrictEqual({
      hostname: hostname(),
      os: manifest.host.os,
      arch: arch(),
      cpus: cpus().length,
      cpu_model: cpus()[0]!.model.trim(),
      memory_bytes: manifest.host.memory_bytes,
    });
  });

  test('returns the commit of the directory given, dirty only for changed tracked files', async () => {
    const dir = join(root, 'repo');
    mkdirSync(dir);
    git(dir, 'init', '-q');
    writeFileSync(join(dir, 'a.txt'), 'a\n');
    git(dir, 'add', 'a.txt');
    git(dir, 'commit', '-q', '-m', 'first');
    const head = git(dir, 'rev-parse', 'HEAD');
    writeFileSync(join(dir, 'untracked.txt'), 'new\n');
    const clean = await buildManifest({ ...facts, cwd: dir, recipeFile: 'r.yaml', command: ['atk', 'run'] });
    expect([clean.git, clean.recipe_file, clean.command]).toStrictEqual([
      { commit: head, dirty: false },
      'r.yaml',
      ['atk', 'run'],
    ]);
    writeFileSync(join(dir, 'a.txt'), 'changed\n');
    expect((await buildManifest({ ...facts, cwd: dir })).git).toStrictEqual({ commit: head, dirty: true });
  });
});

describe('sha256 and atkVersion', () => {
  test('returns the hex sha256 of a text and the package version', () => {
    expect(sha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const { version } = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
    expect([atkVersion(), atkVersion()]).toStrictEqual([version, version]);
  });
});
