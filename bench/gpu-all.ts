// The one prepared device script: everything a borrowed GPU should run, unattended, in one command, under
// 8 minutes on an H100/H200. In order, each with its own time limit so one slow part cannot starve the rest:
// the trainer's pytest with CUDA, bench/gpu.py (training throughput and MFU, decode, and where a training
// step's time goes), and bench/gpu-run.ts (a whole one-GPU atk run against its parts). What each prints is
// also written to reports/gpu-all-<time>.md, markdown the README's GPU section (docs/gpu.md) can take as
// it is. Without CUDA it says so and exits 0.
//   npm run bench gpu-all
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/util/paths.js';
import { markdownOf } from './lib/gpu-run-figures.js';

const python = process.env.ATK_PYTHON ?? '/usr/bin/python3';
const root = projectRoot();

const probe = spawnSync(python, [
  '-c',
  'import torch, sys; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""); print(torch.__version__)',
]);
const [device, torchVersion] = probe.stdout.toString().split('\n');
if (!device) {
  console.log(
    'bench/gpu-all.ts needs a CUDA GPU; this machine has none (torch sees no CUDA device). Nothing measured.',
  );
  process.exit(0);
}

interface Part {
  readonly title: string;
  readonly command: readonly string[];
  /** Seconds: the three together stay under 8 minutes. */
  readonly limitS: number;
}
const parts: Part[] = [
  {
    title: 'pytest trainer (CUDA)',
    command: [python, '-m', 'pytest', '-q', '-x', '-p', 'no:cacheprovider', 'trainer/tests'],
    limitS: 120,
  },
  {
    title: 'npm run bench gpu -- train decode --profile',
    command: [python, 'bench/gpu.py', 'train', 'decode', '--profile'],
    limitS: 200,
  },
  { title: 'npm run bench gpu-run', command: ['npx', 'tsx', 'bench/gpu-run.ts'], limitS: 150 },
];

const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).stdout.toString().trim();
const started = new Date();
const report: string[] = [
  `# bench gpu-all on ${device}`,
  '',
  `${started.toISOString()}, atk at ${commit || 'an unknown commit'}, torch ${torchVersion}.`,
  '',
];
let failed = 0;
for (const part of parts) {
  console.log(`\n== ${part.title} (limit ${part.limitS} s)`);
  const { code, output, seconds, timedOut } = await runPart(part);
  const verdict = timedOut ? `stopped at its ${part.limitS} s limit` : `exit ${code}`;
  if (timedOut || code !== 0) failed++;
  report.push(`## ${part.title}`, '', `${verdict}, ${seconds.toFixed(0)} s.`, '', ...markdownOf(output), '');
}
mkdirSync(join(root, 'reports'), { recursive: true });
const file = join(root, 'reports', `gpu-all-${started.toISOString().replace(/[:.]/g, '-')}.md`);
writeFileSync(file, report.join('\n'));
console.log(
  `\ngpu-all: ${failed ? `${failed} part(s) failed or ran out of time` : 'every part finished'}; report: ${file}`,
);
process.exit(failed ? 1 : 0);

/** One part, its output echoed as it comes and kept; killed (with what it printed so far kept) at its limit. */
function runPart(part: Part): Promise<{ code: number | null; output: string; seconds: number; timedOut: boolean }> {
  const start = performance.now();
  return new Promise((resolve) => {
    const child = spawn(part.command[0]!, part.command.slice(1), { cwd: root, detached: true });
    let output = '';
    const keep = (chunk: Buffer): void => {
      process.stdout.write(chunk);
      output += chunk.toString();
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL'); // the whole group: pytest's and atk's children too
      } catch {}
    }, part.limitS * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, seconds: (performance.now() - start) / 1000, timedOut });
    });
  });
}
