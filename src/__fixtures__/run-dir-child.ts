/**
 * A separate process for run-directory tests (run with `node --import tsx`):
 *   create <runsDir> <name> <startAtMs>   wait until startAtMs, create a run, print its version
 *   churn <runDir> <bytes>                rewrite the manifest and a large trajectory file forever,
 *                                         printing "wrote N" after each round, until killed
 *   hold <runDir>                         take the run's writer lock, print "locked", wait until killed
 *   lock <runDir>                         take the run's writer lock, print "locked" and exit normally
 */
import { createRunDir, openRunDir } from '../runs/index.js';

const [mode, a, b, c] = process.argv.slice(2);

if (mode === 'create') {
  const startAt = Number(c);
  while (Date.now() < startAt) await new Promise((r) => setTimeout(r, 1));
  const run = await createRunDir({
    runsDir: a!,
    name: b!,
    recipeText: 'name: race\n',
    resolvedYaml: 'name: race\n',
    seed: 0,
  });
  process.stdout.write(`${run.version}\n`);
} else if (mode === 'churn') {
  const run = await openRunDir(a!);
  const big = 'x'.repeat(Number(b));
  for (let i = 0; ; i++) {
    await run.updateManifest({ churn: { round: i, padding: big } });
    await run.writeTrajectories(0, [
      { round: i, padding: big },
      { round: i, padding: big },
    ]);
    await run.appendMetrics({ kind: 'train', step: i, padding: big.slice(0, 4096) });
    process.stdout.write(`wrote ${i}\n`);
  }
} else if (mode === 'hold' || mode === 'lock') {
  const run = await openRunDir(a!);
  await run.lock();
  process.stdout.write('locked\n');
  if (mode === 'hold') setInterval(() => undefined, 60_000);
}
