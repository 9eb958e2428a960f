// `npm run mutate [TARGET ...]`: mutation testing, a benchmark-like command (not part of npm test).
// TypeScript targets (folders or files under src/) go to Stryker (stryker.config.mjs), trainer targets
// (trainer/atk_trainer/train/<file>.py) to scripts/mutate-trainer.py. With no target: the core folders
// (src/tokens src/algorithms src/rollout src/runs src/run src/gateway) and the trainer's update. It
// prints the mutation score per folder and every surviving mutant; both runs are incremental
// (reports/mutation/, a folder per TypeScript target), so a rerun tests only what changed. A full run takes
// hours on 2 cores; ATK_MUTATE_CONCURRENCY=1 leaves a core free.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

const CORE = ['src/tokens', 'src/algorithms', 'src/rollout', 'src/runs', 'src/run', 'src/gateway'];
const TRAINER = 'trainer/atk_trainer/train/';
const args = process.argv.slice(2);
const ts = args.length ? args.filter((a) => a.startsWith('src/')) : CORE;
const py = args.length ? args.filter((a) => a.startsWith(TRAINER)).map((a) => a.slice(TRAINER.length)) : [];
const unknown = args.filter((a) => !a.startsWith('src/') && !a.startsWith(TRAINER));
if (unknown.length) {
  console.error(`mutate: ${unknown.join(', ')}: name folders or files under src/ or ${TRAINER}`);
  process.exit(2);
}
let failed = false;

// One Stryker run per target, each with its own report and incremental file (reports/mutation/<target>/):
// a target's results survive runs of the others, and two shells naming different targets can share the work.
const reports = [];
for (const target of ts.map((t) => t.replace(/\/$/, ''))) {
  const dir = `reports/mutation/${target.replace(/[/:]/g, '-')}`;
  console.log(`\nmutate: ${target} (report in ${dir})`);
  const run = spawnSync('npx', ['stryker', 'run', 'stryker.config.mjs'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, ATK_MUTATE: target, ATK_MUTATE_DIR: dir },
  });
  failed ||= run.status !== 0;
  if (existsSync(`${dir}/mutation.json`)) reports.push(JSON.parse(readFileSync(`${dir}/mutation.json`, 'utf8')));
}
if (reports.length) printFolders(reports);
if (args.length === 0 || py.length) {
  const python = [process.env.ATK_PYTHON, '/usr/bin/python3', 'python3'].find(
    (p) => p && spawnSync(p, ['-c', 'import torch, pytest'], { stdio: 'ignore' }).status === 0,
  );
  if (!python) {
    console.error('mutate: no Python that imports torch and pytest for the trainer (set ATK_PYTHON)');
    process.exit(1);
  }
  const run = spawnSync(python, ['scripts/mutate-trainer.py', ...py], { stdio: 'inherit' });
  failed ||= run.status !== 0;
}
process.exit(failed ? 1 : 0);

/** Mutation score per folder from Stryker's JSON reports (mutation-testing-report-schema), then each survivor. */
function printFolders(reports) {
  const folders = new Map();
  const survivors = [];
  for (const [file, { mutants }] of reports.flatMap((r) => Object.entries(r.files))) {
    const folder = dirname(file);
    const tally = folders.get(folder) ?? { killed: 0, total: 0 };
    for (const m of mutants) {
      if (m.status === 'Ignored' || m.status === 'CompileError' || m.status === 'RuntimeError') continue;
      tally.total++;
      if (m.status === 'Killed' || m.status === 'Timeout') tally.killed++;
      else
        survivors.push(
          `${file}:${m.location.start.line}:${m.location.start.column}  ${m.mutatorName}${m.replacement ? ` -> ${m.replacement.split('\n')[0].slice(0, 60)}` : ''} (${m.status})`,
        );
    }
    folders.set(folder, tally);
  }
  console.log('\nmutation score per folder (killed or timed out / mutants; NoCoverage counts as survived):');
  for (const [folder, { killed, total }] of [...folders].sort()) {
    console.log(`  ${folder}: ${total ? ((100 * killed) / total).toFixed(0) : 'n/a'}% (${killed} of ${total})`);
  }
  if (survivors.length) console.log(`surviving mutants (${survivors.length}):\n  ${survivors.join('\n  ')}`);
}
