/** A differing region: `a[aStart, aEnd)` was replaced by `b[bStart, bEnd)` (either side may be empty). */
export interface DiffHunk {
  readonly aStart: number;
  readonly aEnd: number;
  readonly bStart: number;
  readonly bEnd: number;
}

/**
 * Shortest edit script between two token sequences (Myers), grouped into hunks. The common prefix and
 * suffix are cut first, so long identical trajectories cost O(n). When more than `maxEdits` edits would
 * be needed the whole middle is reported as one hunk, to bound the quadratic memory of the trace.
 */
export function diffTokens(a: readonly number[], b: readonly number[], maxEdits = 4000): DiffHunk[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const aMid = a.slice(head, a.length - tail);
  const bMid = b.slice(head, b.length - tail);
  if (aMid.length === 0 && bMid.length === 0) return [];
  const script = editScript(aMid, bMid, maxEdits);
  if (!script) return [{ aStart: head, aEnd: a.length - tail, bStart: head, bEnd: b.length - tail }];
  return groupHunks(script, head);
}

/** Per position: 0 = kept, 1 = deleted from a, 2 = inserted from b; null past `maxEdits`. */
function editScript(a: readonly number[], b: readonly number[], maxEdits: number): Uint8Array | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, n, m, d);
    }
  }
  return null;
}

function backtrack(trace: Int32Array[], n: number, m: number, dEnd: number): Uint8Array {
  const ops: number[] = [];
  let x = n;
  let y = m;
  for (let d = dEnd; d > 0; d--) {
    const saved = trace[d];
    const at = (k: number): number => saved[k + d + 1];
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push(0);
      x--;
      y--;
    }
    ops.push(x === prevX ? 2 : 1);
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    ops.push(0);
    x--;
    y--;
  }
  return Uint8Array.from(ops.reverse());
}

function groupHunks(script: Uint8Array, base: number): DiffHunk[] {
  const hunks: DiffHunk[] = [];
  let x = base;
  let y = base;
  let open: { aStart: number; bStart: number } | null = null;
  for (const op of script) {
    if (op === 0) {
      if (open) hunks.push({ aStart: open.aStart, aEnd: x, bStart: open.bStart, bEnd: y });
      open = null;
      x++;
      y++;
      continue;
    }
    open ??= { aStart: x, bStart: y };
    if (op === 1) x++;
    else y++;
  }
  if (open) hunks.push({ aStart: open.aStart, aEnd: x, bStart: open.bStart, bEnd: y });
  return hunks;
}
