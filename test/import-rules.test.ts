import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type ICruiseResult, cruise } from 'dependency-cruiser';
import { afterAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../src/util/paths.js';

// The rule set `npm run lint` applies (.dependency-cruiser.cjs), run through dependency-cruiser's API
// on the folders its script names (package.json, lint:imports: `depcruise src viewer --config ...`).
const config = createRequire(import.meta.url)(join(projectRoot(), '.dependency-cruiser.cjs'));
const script: string = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')).scripts['lint:imports'];
const [, ...args] = script.split(' ');
const roots = args.slice(0, args.indexOf('--config'));

async function violations(baseDir: string): Promise<string[]> {
  const { forbidden, options } = config;
  const reporter = await cruise(
    roots,
    {
      ...options,
      baseDir,
      ruleSet: { forbidden },
      validate: true,
      tsConfig: { fileName: join(projectRoot(), 'tsconfig.json') },
    },
    { extensionAlias: { '.js': ['.ts', '.tsx', '.js'] } } as never,
  );
  const output = reporter.output as ICruiseResult;
  return output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

function tree(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'atk-import-rules-'));
  dirs.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('import rules', () => {
  test('returns no violation for the source tree', async () => {
    expect(await violations(projectRoot())).toStrictEqual([]);
  });

  test('rejects an import against the layers, a circle, a peer import, the built-ins outside the entry point, a folder with no layer, and a circle or server import in viewer/', async () => {
    const dir = tree({
      'src/recipe/load.ts': "import { datasets } from '../datasets/index.js';\nexport const x = datasets;\n",
      'src/datasets/index.ts':
        "import type { Problem } from '../recipe/problem.js';\nexport const datasets: Problem[] = [];\n",
      'src/recipe/problem.ts': 'export interface Problem { readonly path: string }\n',
      'src/util/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'src/util/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      'src/engines/launch.ts': "import { port } from '../trainer/port.js';\nexport const launch = port;\n",
      'src/trainer/port.ts': 'export const port = 1;\n',
      'src/run/session.ts': "import '../builtins.js';\nexport const session = 1;\n",
      'src/builtins.ts': 'export const registered = true;\n',
      'src/cli/main.ts':
        "import '../builtins.js';\nimport { session } from '../run/session.js';\nexport const main = session;\n",
      // A folder the layers do not name yet must be given its place first.
      'src/widgets/serve.ts': "import { a } from '../util/a.js';\nexport const serve = a;\n",
      // A test may reach up: the recipe loader's tests load real components.
      'src/recipe/load.test.ts': "import { datasets } from '../datasets/index.js';\nexport const y = datasets;\n",
      // The browser bundle: a page that takes its type from the entry module that imports it, and server code.
      'viewer/main.ts': "import { page } from './page.js';\nexport type View = () => void;\npage();\n",
      'viewer/page.ts':
        "import type { View } from './main.js';\nimport { a } from '../src/util/a.js';\nexport const page: View = a;\n",
    });
    expect(await violations(dir)).toStrictEqual([
      'builtins-at-entry: src/run/session.ts -> src/builtins.ts',
      'layer-engines: src/engines/launch.ts -> src/trainer/port.ts',
      'layer-recipe: src/recipe/load.ts -> src/datasets/index.ts',
      'layers-known: src/widgets/serve.ts -> src/util/a.ts',
      'no-circular: src/util/a.ts -> src/util/b.ts',
      'no-circular: viewer/main.ts -> viewer/page.ts',
      'viewer-apart: viewer/page.ts -> src/util/a.ts',
    ]);
  });
});

describe('the layer picture in docs/development.md', () => {
  test('returns the folders of LAYERS, top to bottom', () => {
    const root = projectRoot();
    const rules = readFileSync(join(root, '.dependency-cruiser.cjs'), 'utf8');
    const literal = rules.slice(
      rules.indexOf('const LAYERS = [') + 'const LAYERS = '.length,
      rules.indexOf('];', rules.indexOf('const LAYERS')) + 1,
    );
    const layers = (JSON.parse(literal.replace(/'/g, '"').replace(/,\s*]/g, ']')) as string[][]).reverse();
    const page = readFileSync(join(root, 'docs/development.md'), 'utf8');
    const start = page.indexOf('```\ncli ');
    const picture = page
      .slice(start + 4, page.indexOf('```', start + 4))
      .trim()
      .split('\n');
    const folders = picture.map((line) =>
      line
        .split(/\s{2,}/)[0]!
        .split(' | ')
        .map((f) => f.trim()),
    );
    expect(folders).toStrictEqual(layers);
  });
});
