import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../util/paths.js';
import {
  RECIPE_REFERENCE_PAGE,
  recipeReference,
  REFERENCE_BEGIN,
  REFERENCE_END,
  referenceMarkdown,
  unescapeCell,
  type ReferenceRow,
} from './reference.js';

const FIX = 'regenerate it: npx tsx scripts/recipe-reference.ts';

/** The rows of the reference table in docs/recipes.md, as written. */
function pageRows(): ReferenceRow[] {
  const page = readFileSync(join(projectRoot(), RECIPE_REFERENCE_PAGE), 'utf8');
  const block = page.slice(page.indexOf(REFERENCE_BEGIN), page.indexOf(REFERENCE_END));
  return block
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const cells = line
        .slice(2, -2)
        .split(/ (?<!\\)\| /)
        .map(unescapeCell);
      const bare = (cell: string): string => cell.replace(/^`(.*)`$/, '$1');
      return { key: bare(cells[0]!), type: cells[1]!, default: bare(cells[2]!), meaning: cells[3]! };
    });
}

describe(`recipe reference in ${RECIPE_REFERENCE_PAGE}`, () => {
  const page = pageRows();
  const schema = recipeReference();

  test('returns every schema key, and no key the schema lacks', () => {
    const pageKeys = page.map((r) => r.key);
    const schemaKeys = schema.map((r) => r.key);
    expect(
      {
        missingFromPage: schemaKeys.filter((k) => !pageKeys.includes(k)),
        notInSchema: pageKeys.filter((k) => !schemaKeys.includes(k)),
      },
      FIX,
    ).toStrictEqual({
      missingFromPage: [],
      notInSchema: [],
    });
  });

  test('returns the schema default and type of each key', () => {
    const byKey = new Map(page.map((r) => [r.key, r]));
    const wrong = schema.filter(
      (r) => byKey.has(r.key) && (byKey.get(r.key)!.default !== r.default || byKey.get(r.key)!.type !== r.type),
    );
    expect(
      wrong.map(
        (r) =>
          `${r.key}: schema ${r.type} = ${r.default}, page ${byKey.get(r.key)!.type} = ${byKey.get(r.key)!.default}`,
      ),
      FIX,
    ).toStrictEqual([]);
  });

  test('returns the generated table exactly, meanings included', () => {
    const text = readFileSync(join(projectRoot(), RECIPE_REFERENCE_PAGE), 'utf8');
    expect(text.slice(text.indexOf(REFERENCE_BEGIN), text.indexOf(REFERENCE_END) + REFERENCE_END.length), FIX).toBe(
      referenceMarkdown(),
    );
  });

  test('returns a row with type, default and meaning for each kind of key', () => {
    const row = (key: string): ReferenceRow | undefined => schema.find((r) => r.key === key);
    expect([
      row('name'),
      row('model.engine.kind'),
      row('tools[].name'),
      row('rollout.top_p'),
      row('algorithm.lora.target_modules'),
    ]).toStrictEqual([
      { key: 'name', type: 'string', default: 'required', meaning: 'Recipe name; runs go to <runs_dir>/<name>/vNNN.' },
      expect.objectContaining({
        key: 'model.engine.kind',
        type: 'one of: embedded, vllm, sglang, url',
        default: 'embedded',
      }),
      expect.objectContaining({ key: 'tools[].name', default: '-' }),
      expect.objectContaining({ key: 'rollout.top_p', type: 'number, > 0, <= 1', default: '1' }),
      expect.objectContaining({
        key: 'algorithm.lora.target_modules',
        type: 'list of string',
        default: '[q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]',
      }),
    ]);
  });
});
