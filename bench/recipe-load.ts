// Recipe load + validate time for a large recipe with a deep `extends` chain: 16 files, each
// overriding a slice of the previous one, the top with 200 tools and large template-variable maps
// (component options are checked against their schemas, so those stay valid).
// Prints ms per load and loads/s; timing never fails the run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { registerBuiltins } from '../src/builtins.js';
import { loadRecipe } from '../src/recipe/index.js';
import { projectRoot } from '../src/util/paths.js';

registerBuiltins();

const DEPTH = 16;
const dir = mkdtempSync(join(tmpdir(), 'atk-bench-recipe-'));

const options = (level: number): Record<string, unknown> =>
  Object.fromEntries(
    Array.from({ length: 50 }, (_, i) => [
      `key_${level}_${i}`,
      { value: i, list: [level, i, 'x'], nested: { deep: `v${i}` } },
    ]),
  );

writeFileSync(
  join(dir, 'level-0.yaml'),
  stringify({
    name: 'bench',
    model: { path: 'Qwen/Qwen3-0.6B' },
    dataset: { name: 'arith', options: { max_digits: 2 } },
    reward: { name: 'math_answer' },
  }),
);
for (let level = 1; level < DEPTH; level++) {
  const body: Record<string, unknown> = {
    extends: `level-${level - 1}.yaml`,
    seed: level,
    dataset: { options: { max_digits: 1 + (level % 3), train_size: 1000 + level } },
    rollout: { concurrency: 8 + level, temperature: 1 - level / 100 },
    train: { steps: 100 + level },
    agent: { chat_template_kwargs: options(level) },
  };
  if (level === DEPTH - 1)
    body.tools = Array.from({ length: 200 }, (_, i) => ({ name: 'calculator', options: { max_length: 100 + i } }));
  writeFileSync(join(dir, `level-${level}.yaml`), stringify(body));
}
const top = join(dir, `level-${DEPTH - 1}.yaml`);
const overrides = ['train.steps=5', 'rollout.top_p=0.9', 'model.engine.max_model_len=8192'];

for (let i = 0; i < 5; i++) await loadRecipe(top, overrides); // warm-up: module loading, JIT
const rounds = 50;
const start = performance.now();
for (let i = 0; i < rounds; i++) await loadRecipe(top, overrides);
const ms = (performance.now() - start) / rounds;
console.log(`recipe load+validate: ${DEPTH}-file extends chain, 200 tools, ${DEPTH * 50 * 2} option keys, 3 overrides`);
console.log(`  ${ms.toFixed(2)} ms per load, ${(1000 / ms).toFixed(0)} loads/s`);
rmSync(dir, { recursive: true, force: true });

const quickstart = join(projectRoot(), 'recipes', 'quickstart.yaml');
const small = performance.now();
for (let i = 0; i < 200; i++) await loadRecipe(quickstart, ['train.steps=5']);
const smallMs = (performance.now() - small) / 200;
console.log(`recipe load+validate: recipes/quickstart.yaml, 1 override`);
console.log(`  ${smallMs.toFixed(2)} ms per load, ${(1000 / smallMs).toFixed(0)} loads/s`);
