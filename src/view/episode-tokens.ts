/**
 * The token view of one episode for the browser: every token decoded with the run's tokenizer (the
 * same rows as `atk inspect-trajectory --tokens`), the segments, and the drift audit's findings
 * (as `--drift`). The tokenizer and the recipe's tool specs are loaded once per run.
 */
import type { ChatTool, ModelTokenizer } from '../tokens/index.js';
import { recordedDrift } from '../ui/trajectory/drift-audit.js';
import type { TrajectoryRecord } from '../ui/trajectory/record.js';
import { readRunModel, runTokenizer, runToolSpecs, type RunModel } from '../ui/trajectory/run-context.js';
import { recordedSegments } from '../ui/trajectory/segments.js';
import { tokenRows } from '../ui/trajectory/token-view.js';
import type { EpisodeTokens } from './api-types.js';

interface RunTokenContext {
  readonly model: RunModel;
  readonly tokenizer: ModelTokenizer;
  readonly tools: readonly ChatTool[] | undefined;
  readonly toolsNote: string | undefined;
}

export class EpisodeTokenViews {
  private readonly contexts = new Map<string, Promise<RunTokenContext>>();

  /**
   * The token view of `record`, from the run in `runDir`.
   * @throws InputError when the run's tokenizer cannot be found, or the record has no token trajectory.
   */
  async view(runDir: string, record: TrajectoryRecord): Promise<EpisodeTokens> {
    const context = await this.context(runDir);
    const segments = recordedSegments(record);
    const starts = segments.map((_, i) => segments.slice(0, i).reduce((n, s) => n + s.trajectory.length, 0));
    const rows = segments.flatMap((s) => tokenRows(s.trajectory, context.tokenizer));
    let drift: EpisodeTokens['drift'];
    try {
      const audit = await recordedDrift(record, segments, context.tokenizer, context.model, context.tools);
      drift = {
        report: audit.report,
        toolsNote: audit.toolsNote ?? context.toolsNote ?? null,
        segments: audit.segments.map((report, i) => ({ start: starts[i]!, report })),
      };
    } catch (error) {
      drift = { error: (error as Error).message };
    }
    return {
      length: rows.length,
      segments: segments.flatMap((segment, k) =>
        segment.trajectory.segments.map((s) => ({
          source: s.source,
          start: starts[k]! + s.start,
          length: s.length,
          turn: s.turn,
          policyVersion: s.policyVersion ?? null,
          finishReason: s.finishReason ?? null,
          episodeSegment: k,
        })),
      ),
      episodeSegments: segments.map((s, k) => ({
        start: starts[k]!,
        length: s.trajectory.length,
        endedBecause: s.endedBecause ?? null,
      })),
      tokens: rows.map(
        (r) => [r.id, r.text, r.mask, r.logprob === null ? null : Math.round(r.logprob * 1e5) / 1e5] as const,
      ),
      drift,
    };
  }

  private context(runDir: string): Promise<RunTokenContext> {
    let context = this.contexts.get(runDir);
    if (!context) {
      context = loadContext(runDir);
      // A failure (tokenizer missing) is not cached: the user may fix it while the viewer runs.
      context.catch(() => this.contexts.delete(runDir));
      this.contexts.set(runDir, context);
    }
    return context;
  }
}

async function loadContext(runDir: string): Promise<RunTokenContext> {
  const model = await readRunModel(runDir);
  const tokenizer = await runTokenizer(model);
  try {
    return { model, tokenizer, tools: await runToolSpecs(model), toolsNote: undefined };
  } catch (error) {
    return {
      model,
      tokenizer,
      tools: [],
      toolsNote: `tools could not be rebuilt from the recipe (${(error as Error).message}); the prompt's tool list will show as drift`,
    };
  }
}
