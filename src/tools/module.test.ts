import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runStrandsTool } from '../domains/tau2/tools/common.js';
import { InputError } from '../errors/index.js';
import type { EpisodeEnv } from './types.js';
import { moduleTools } from './module.js';

// A directory with no node_modules: the modules' imports of the SDK and zod must resolve to atk's.
const dir = mkdtempSync(join(tmpdir(), 'atk-tool-module-'));
writeFileSync(
  join(dir, 'tools.ts'),
  `import { tool } from '@strands-agents/sdk';
import { z } from 'zod';
interface Order { readonly status: string }
const orders: Record<string, Order> = { A1: { status: 'shipped' } };
export const lookupOrder = tool({
  name: 'lookup_order',
  description: 'Look up an order',
  inputSchema: z.object({ id: z.string() }),
  callback: ({ id }) => orders[id]?.status ?? \`no order \${id}\`,
});
export const pair = [lookupOrder, tool({ name: 'echo', description: 'Echo', inputSchema: z.object({ text: z.string() }), callback: ({ text }) => text })];
export function perEpisode(env: { episodeId: string }) {
  return tool({ name: 'whoami', description: 'Episode id', inputSchema: z.object({}), callback: () => env.episodeId });
}
export const notATool = 42;
`,
);
writeFileSync(
  join(dir, 'tools.mjs'),
  `import { tool } from '@strands-agents/sdk';
import { z } from 'zod';
export default tool({ name: 'double', description: 'Double', inputSchema: z.object({ x: z.number() }), callback: ({ x }) => 2 * x });
`,
);
const ctx = { recipeDir: dir, warn: () => undefined };
const env = (episodeId: string) =>
  ({
    episodeId,
    task: { id: 't', prompt: '', data: {} },
    state: new Map(),
    signal: new AbortController().signal,
  }) as EpisodeEnv;
const names = async (options: Record<string, unknown>, episode = 'e1'): Promise<string[]> =>
  (await moduleTools.create(options, ctx))(env(episode)).map((t) => t.name);

describe('moduleTools', () => {
  it('returns the named tool of a TypeScript module, which runs', async () => {
    const [lookup] = (await moduleTools.create({ module: './tools.ts', export: 'lookupOrder' }, ctx))(env('e1'));
    expect(await runStrandsTool(lookup!, { id: 'A1' })).toStrictEqual({ status: 'success', output: 'shipped' });
    expect(await runStrandsTool(lookup!, { id: 7 })).toMatchObject({ status: 'error' });
  });

  it('returns arrays, per-episode factories, every exported tool, and a JavaScript default export', async () => {
    expect(await names({ module: 'tools.ts', export: 'pair' })).toStrictEqual(['lookup_order', 'echo']);
    const make = await moduleTools.create({ module: 'tools.ts', export: 'perEpisode' }, ctx);
    expect(await runStrandsTool(make(env('ep-7'))[0]!, {})).toStrictEqual({ status: 'success', output: 'ep-7' });
    expect(await names({ module: join(dir, 'tools.ts') })).toStrictEqual(['lookup_order', 'echo']);
    const [double] = (await moduleTools.create({ module: 'tools.mjs' }, ctx))(env('e1'));
    expect(await runStrandsTool(double!, { x: 21 })).toStrictEqual({ status: 'success', output: '42' });
  });

  it('rejects a missing module, a missing export and an export that is not a tool', async () => {
    await expect(moduleTools.create({ module: 'absent.ts' }, ctx)).rejects.toThrow(
      `${join(dir, 'absent.ts')}: no such module`,
    );
    const missing = await moduleTools.create({ module: 'tools.ts', export: 'lookup' }, ctx).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(InputError);
    expect((missing as Error).message).toBe(
      `${join(dir, 'tools.ts')}: no export 'lookup'; it exports lookupOrder, notATool, pair, perEpisode`,
    );
    await expect(moduleTools.create({ module: 'tools.ts', export: 'notATool' }, ctx)).rejects.toThrow(
      'tools.ts#notATool: expected a Strands tool or an array of tools, got number',
    );
  });

  it('rejects a module that fails to load, quoting its error', async () => {
    writeFileSync(join(dir, 'broken.ts'), "throw new Error('no database configured');\n");
    await expect(moduleTools.create({ module: 'broken.ts' }, ctx)).rejects.toThrow(
      'broken.ts: failed to load: no database configured',
    );
  });
});
