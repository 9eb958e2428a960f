/**
 * The import rules `npm run lint` enforces (docs/development.md): folders under src/ form layers
 * and import only downwards; no import circles; only the CLI entry point registers the built-ins.
 * Tests and fixtures may reach any layer (a test of the recipe loader needs real components).
 * viewer/, the browser bundle of `atk view`, is cruised too (package.json, lint:imports): no circles
 * there either, and it shares only the API's types with the server.
 */

/** Bottom to top. A folder may import from folders on an earlier line; folders on one line are peers and stay apart. */
const LAYERS = [
  ['errors'],
  ['util'],
  ['tokens'],
  ['recipe'],
  ['engines', 'trainer', 'runs'],
  ['trackers', 'setup'],
  ['algorithms'],
  ['domains'],
  ['datasets'],
  ['models'],
  ['tools'],
  ['rewards'],
  ['components'],
  ['agent'],
  ['rollout'],
  ['gateway'],
  ['policy'],
  ['cluster'],
  ['run'],
  ['ui'],
  ['view'],
  ['cli'],
];

const TESTS = ['\\.test\\.tsx?$', '^src/__fixtures__/'];

const layerRules = LAYERS.flatMap((line, rank) =>
  line.map((folder) => {
    const above = LAYERS.slice(rank + 1).flat();
    const peers = line.filter((other) => other !== folder);
    return {
      name: `layer-${folder}`,
      comment: `src/${folder} may import only from the layers below it (.dependency-cruiser.cjs, LAYERS): not from ${[...peers, ...above].join(', ')}`,
      severity: 'error',
      from: { path: `^src/${folder}/`, pathNot: TESTS },
      to: { path: `^src/(${[...peers, ...above].join('|')})/` },
    };
  }),
);

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      comment: 'an import circle makes the load order decide behaviour; fold the shared part into a lower module',
      severity: 'error',
      from: { pathNot: TESTS },
      to: { circular: true },
    },
    {
      name: 'builtins-at-entry',
      comment:
        'the built-ins are registered once, by the CLI entry point (src/cli/main.ts), a rollout worker thread (its own entry point) or a test setup',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/cli/main\\.ts$', '^src/run/rollout-worker\\.ts$', ...TESTS] },
      to: { path: '^src/builtins\\.ts$' },
    },
    {
      name: 'viewer-apart',
      comment:
        'viewer/ is the browser bundle: besides its own modules it imports only uplot and the API types the server shares with it (src/view/api-types.d.ts)',
      severity: 'error',
      from: { path: '^viewer/' },
      to: { pathNot: ['^viewer/', '^src/view/api-types\\.d\\.ts$', '^node_modules/uplot/'] },
    },
    {
      name: 'layers-known',
      comment: 'every folder under src/ has a place in LAYERS (.dependency-cruiser.cjs)',
      severity: 'error',
      from: { path: '^src/', pathNot: [`^src/(${LAYERS.flat().join('|')}|__fixtures__)/`, '^src/builtins\\.ts$'] },
      to: { path: '.' },
    },
  ],
  options: {
    // TypeScript 7 has no JavaScript API; swc parses the sources, including type-only imports.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // .d.ts: src/view/api-types.d.ts, the one declaration file of the tree (types only, shared with viewer/).
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.d.ts', '.js', '.mjs'] },
  },
};
