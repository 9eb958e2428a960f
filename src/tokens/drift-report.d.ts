// The drift audit's report (drift.ts), in a declaration file: it holds types only and imports nothing,
// so the viewer's browser bundle reads the same report through src/view/api-types.d.ts.

/** One place where the re-rendered conversation differs from the trajectory. */
export interface DriftHunk {
  /** Token range in the trajectory, `[start, end)`. */
  readonly trajectory: { readonly start: number; readonly end: number; readonly text: string };
  /** Token range in the re-rendered conversation. */
  readonly rerendered: { readonly start: number; readonly end: number; readonly text: string };
  /** Model (mask 1) tokens inside the trajectory range: what a text pipeline would train on wrongly. */
  readonly modelTokens: number;
}

/** What a text-based pipeline would have trained on, compared with the exact tokens. */
export interface DriftReport {
  readonly identical: boolean;
  readonly trajectoryTokens: number;
  readonly rerenderedTokens: number;
  /** First token index where the two differ, or null. */
  readonly firstDivergence: number | null;
  /** Model tokens the text pipeline would get wrong, summed over all hunks. */
  readonly changedModelTokens: number;
  readonly hunkCount: number;
  /** The first `maxHunks` hunks. */
  readonly hunks: readonly DriftHunk[];
}
