import { basename, dirname, relative } from 'node:path';
import { InputError } from '../errors/index.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/index.js';
import { painter, wantsColor, type Painter } from '../ui/ansi.js';
import { recordedDrift } from '../ui/trajectory/drift-audit.js';
import { driftLines } from '../ui/trajectory/drift-view.js';
import { conversationLines, episodeHeader, episodeListing, failuresByKind } from '../ui/trajectory/episode-view.js';
import { readTrajectoryFile, type TrajectoryRecord } from '../ui/trajectory/record.js';
import { readRunModel, runTokenizer, type RunModel } from '../ui/trajectory/run-context.js';
import { recordedSegments, segmentLabel, type RecordedSegment } from '../ui/trajectory/segments.js';
import { selectEpisode, type EpisodeSelector } from '../ui/trajectory/select.js';
import { locateTrajectories, type TrajectorySource } from '../ui/trajectory/source.js';
import { tokenRows, tokenViewLines } from '../ui/trajectory/token-view.js';
import { defineCommand } from './define-command.js';
import { viewHint } from './view.js';

export interface InspectOptions {
  readonly path: string;
  readonly step?: number;
  readonly eval?: string;
  readonly episode?: number;
  readonly best?: boolean;
  readonly worst?: boolean;
  readonly failed?: boolean;
  readonly tokens?: boolean;
  readonly drift?: boolean;
  readonly json?: boolean;
  /** Model (tokenizer) directory to decode with instead of the run's. */
  readonly model?: string;
  /** Probability below which model tokens are highlighted. */
  readonly lowProb?: number;
  /** Colour and inline token view; default: whether stdout is a terminal. */
  readonly color?: boolean;
}

export const inspectTrajectoryCommand = defineCommand({
  command: 'inspect-trajectory <run>',
  describe: 'Show what the agent did in an episode: the conversation, rewards, stats, tokens and drift',
  positionals: {
    run: {
      type: 'string',
      demandOption: true,
      describe: 'Run directory, or one of its trajectories/step-NNNNN.jsonl, eval directories or eval results.jsonl',
    },
  },
  options: {
    step: { type: 'number', describe: 'Training step to read (default: the newest)' },
    eval: {
      type: 'string',
      describe: 'Read eval/<label>/results.jsonl of the run instead (e.g. step-00010)',
    },
    episode: { type: 'number', describe: 'Episode index within the file' },
    best: { type: 'boolean', describe: 'The episode with the highest reward' },
    worst: { type: 'boolean', describe: 'The episode with the lowest reward' },
    failed: { type: 'boolean', describe: 'The first episode that did not succeed' },
    tokens: {
      type: 'boolean',
      describe: 'Token view: loss mask, logprobs, low-probability tokens, segment boundaries',
    },
    drift: {
      type: 'boolean',
      describe: 'Drift audit: where re-rendering the conversation as text would give other tokens',
    },
    json: { type: 'boolean', describe: 'Print JSON for scripts' },
    model: { type: 'string', describe: "Tokenizer directory to decode with (default: the run's model)" },
    'low-prob': {
      type: 'number',
      default: 0.1,
      describe: 'Highlight model tokens with probability below this',
    },
    color: { type: 'boolean', describe: 'Force colour on or off (default: on for a terminal)' },
  },
  conflicts: { episode: ['best', 'worst', 'failed'], best: ['worst', 'failed'], worst: ['failed'] },
  examples: [
    ['$0 inspect-trajectory runs/quickstart/latest --worst', 'the lowest-reward episode of the newest step'],
    ['$0 inspect-trajectory runs/quickstart/v001 --step 3 --episode 5 --tokens', 'one episode token by token'],
    [
      '$0 inspect-trajectory runs/quickstart/v001 --eval step-00020 --failed --drift',
      'a failed eval episode and its drift audit',
    ],
  ],
  handler: async (argv) => {
    process.stdout.write(
      await runInspectTrajectory({ ...argv, path: argv.run, color: argv.color ?? wantsColor(process.stdout) }),
    );
  },
});

/**
 * `atk inspect-trajectory`: without a selector, one line per episode of the file; with one, the
 * episode's header, stats and conversation, plus the token view and drift audit when asked.
 * @throws InputError for a path holding no trajectories, a bad selector, or a tokenizer that cannot be found.
 */
export async function runInspectTrajectory(options: InspectOptions): Promise<string> {
  const source = await locateTrajectories(options.path, {
    ...(options.step !== undefined ? { step: options.step } : {}),
    ...(options.eval !== undefined ? { eval: options.eval } : {}),
  });
  let records = (await readTrajectoryFile(source.file)).map((l) => l.record);
  if (options.step !== undefined && records.some((r) => r.step !== options.step))
    records = records.filter((r) => r.step === options.step);
  if (records.length === 0)
    throw new InputError(`${source.file}: no episodes${options.step === undefined ? '' : ` of step ${options.step}`}`);
  const paint = painter(options.color === true);
  const selector =
    selectorOf(options) ??
    (records.length === 1 || options.tokens || options.drift ? { kind: 'index', index: 0 } : undefined);
  if (!selector) {
    const failures = failuresByKind(records);
    if (options.json)
      return `${JSON.stringify({ file: source.file, failures, episodes: records.map(listEntry) }, null, 2)}\n`;
    const failed = Object.entries(failures).map(([kind, n]) => `${kind} ${n}`);
    return (
      [
        paint(`${source.file}: ${records.length} episodes`, 'bold') +
          (failed.length ? paint(`  ${failed.join('  ')}`, 'red') : ''),
        ...episodeListing(records, paint),
        paint('show one with --episode i, --best, --worst or --failed', 'dim'),
        ...viewHintLines(source, 'episodes', paint),
      ].join('\n') + '\n'
    );
  }
  const { index, record, matches } = selectEpisode(records, selector, source.file);
  const needsTokenizer = options.tokens || options.drift;
  const runModel = needsTokenizer && source.runDir && !options.model ? await readRunModel(source.runDir) : undefined;
  const tokenizer = needsTokenizer ? await tokenizerFor(options.model, runModel, source.file) : undefined;
  // Parsed only when shown: a listing of an episode never needs its tokens.
  const segments = needsTokenizer || record.prior_segments?.length ? segmentsOf(record, source.file) : [];
  const split = segments.length > 1;
  const rows = options.tokens && tokenizer ? segments.map((s) => tokenRows(s.trajectory, tokenizer)) : undefined;
  const drift = options.drift && tokenizer ? await recordedDrift(record, segments, tokenizer, runModel) : undefined;

  if (options.json) {
    const { trajectory: _tokens, prior_segments: _prior, ...rest } = record;
    const perSegment = segments.map((s, i) => ({
      ended_because: s.endedBecause ?? null,
      ...(rows ? { tokens: rows[i] } : {}),
      ...(drift ? { drift: drift.segments[i] } : {}),
    }));
    return `${JSON.stringify({ file: source.file, index, matches, record: rest, ...(rows ? { tokens: rows.at(-1) } : {}), ...(drift ? { drift: drift.report, drift_tools: drift.toolsNote ?? null } : {}), ...(split ? { segments: perSegment } : {}) }, null, 2)}\n`;
  }
  const lines = [...episodeHeader(record, { index, count: records.length }, paint)];
  if (selector.kind === 'failed' && matches.length > 1)
    lines.push(
      paint(
        `${matches.length} episodes did not succeed: ${matches.slice(0, 20).join(', ')}${matches.length > 20 ? ', ...' : ''}`,
        'dim',
      ),
    );
  lines.push('', ...conversationLines(record.messages, paint));
  if (split) lines.push('', ...segments.map((_, i) => segmentSummary(i, segments, paint)));
  if (rows)
    for (const [i, segment] of segments.entries())
      lines.push(
        '',
        ...(split ? [paint(`══ ${segmentLabel(i, segments)} ══`, 'yellow', 'bold')] : []),
        ...tokenViewLines(segment.trajectory, rows[i]!, {
          paint,
          inline: options.color === true,
          lowProbability: options.lowProb ?? 0.1,
        }),
      );
  if (drift) {
    lines.push('', ...(drift.toolsNote ? [paint(drift.toolsNote, 'yellow')] : []));
    for (const [i, report] of drift.segments.entries()) {
      if (split) lines.push(paint(`${segmentLabel(i, segments)}:`, 'bold'));
      lines.push(
        ...(report
          ? driftLines(report, paint)
          : [paint('drift: not audited: the line does not record the conversation this segment rendered', 'dim')]),
      );
    }
  }
  lines.push(
    ...viewHintLines(source, `episode&index=${index}${options.tokens || options.drift ? '&tokens=1' : ''}`, paint),
  );
  return `${lines.join('\n')}\n`;
}

/** The `atk view` command that shows the same file (or episode), when it belongs to a run directory. */
function viewHintLines(source: TrajectorySource, view: 'episodes' | `episode&${string}`, paint: Painter): string[] {
  if (!source.runDir) return [];
  const relativeFile = relative(source.runDir, source.file);
  const id = relativeFile.startsWith('trajectories')
    ? basename(source.file, '.jsonl')
    : `eval/${basename(dirname(source.file))}`;
  const cut = view.indexOf('&');
  const [name, extra] = cut === -1 ? [view, ''] : [view.slice(0, cut), view.slice(cut)];
  return ['', paint(viewHint(source.runDir, `${name}?run={run}&source=${id}${extra}`), 'dim')];
}

function selectorOf(options: InspectOptions): EpisodeSelector | undefined {
  if (options.episode !== undefined) return { kind: 'index', index: options.episode };
  if (options.best) return { kind: 'best' };
  if (options.worst) return { kind: 'worst' };
  if (options.failed) return { kind: 'failed' };
  return undefined;
}

function listEntry(record: TrajectoryRecord, index: number): Record<string, unknown> {
  const { messages: _m, trajectory: _t, ...rest } = record;
  return { index, ...rest };
}

async function tokenizerFor(
  modelDir: string | undefined,
  runModel: RunModel | undefined,
  file: string,
): Promise<ModelTokenizer> {
  if (modelDir) return loadModelTokenizer(modelDir);
  if (!runModel)
    throw new InputError(`${file} is not inside a run directory, so its tokenizer is unknown`, {
      hint: 'pass --model <model or tokenizer dir>',
    });
  return runTokenizer(runModel);
}

/** One line per segment of a split episode: its place, why the next began, its tokens. */
function segmentSummary(index: number, segments: readonly RecordedSegment[], paint: Painter): string {
  const mask = segments[index]!.trajectory.mask();
  const generated = mask.filter((m) => m === 1).length;
  return paint(
    `${segmentLabel(index, segments)}: ${mask.length - generated} environment + ${generated} generated tokens`,
    'yellow',
  );
}

function segmentsOf(record: TrajectoryRecord, file: string): RecordedSegment[] {
  try {
    return recordedSegments(record);
  } catch (error) {
    throw new InputError(
      `${file}: episode ${record.group}/${record.sample} has no usable token trajectory (${(error as Error).message})`,
    );
  }
}
