/**
 * The token view: every token of the trajectory, coloured by its logprob (a heatmap of the model's
 * tokens) or by loss mask, segment by segment; hover for id, logprob and segment; the drift audit's
 * hunks underlined in place and listed below.
 */
import type { DriftReport, EpisodeTokens } from '../src/view/api-types.js';
import { setParams } from './api.js';
import { fmt, h } from './dom.js';

export function tokenView(data: EpisodeTokens, mode: 'logprob' | 'mask'): HTMLElement {
  const drifted = new Set<number>();
  if ('report' in data.drift)
    for (const { start, report } of data.drift.segments)
      for (const hunk of report?.hunks ?? [])
        for (let i = start + hunk.trajectory.start; i < Math.min(start + hunk.trajectory.end, data.length); i++)
          drifted.add(i);
  const hover = h('div', { id: 'tok-hover', hidden: true });
  const body = h('div', { class: 'tokens', id: 'token-view' });
  const split = data.episodeSegments.length > 1;
  data.segments.forEach((segment, k) => {
    const episodeSegment = data.episodeSegments[segment.episodeSegment]!;
    // A split episode: a banner where each of its trajectory segments begins, saying why the next one will.
    if (split && segment.start === episodeSegment.start)
      body.append(
        h(
          'div',
          { class: 'episode-segment-head', 'data-episode-segment': segment.episodeSegment },
          segmentTitle(data, segment.episodeSegment),
        ),
      );
    const rewrite = k > 0 && segment.source === 'prompt' && !split ? ' · new segment: the history was rewritten' : '';
    const head = `${segment.source} · turn ${segment.turn} · tokens ${segment.start}..${segment.start + segment.length - 1}${segment.policyVersion === null ? '' : ` · policy v${segment.policyVersion}`}${segment.finishReason ? ` · finish ${segment.finishReason}` : ''}${rewrite}`;
    const spans: HTMLElement[] = [];
    for (let i = segment.start; i < segment.start + segment.length; i++) {
      const [, text, mask, logprob] = data.tokens[i]!;
      const span = h(
        'span',
        { class: `tok ${mask ? 'model' : 'env'}${drifted.has(i) ? ' drift' : ''}`, 'data-i': i, 'data-segment': k },
        text.replace(/\n/g, '⏎\n'),
      );
      span.style.background = tokenColor(mask, logprob, mode);
      spans.push(span);
    }
    body.append(
      h(
        'div',
        { class: 'segment', 'data-source': segment.source },
        h('div', { class: 'segment-head' }, head),
        ...spans,
      ),
    );
  });
  // One listener for every token: a long episode has tens of thousands of them.
  body.addEventListener('mouseover', (e) => {
    const span = (e.target as HTMLElement).closest<HTMLElement>('.tok');
    if (!span) {
      hover.hidden = true;
      return;
    }
    const i = Number(span.dataset.i);
    const segment = data.segments[Number(span.dataset.segment)]!;
    const [id, text, mask, logprob] = data.tokens[i]!;
    hover.hidden = false;
    hover.textContent = `#${i}  id ${id}  ${JSON.stringify(text)}\n${mask ? `logprob ${fmt(logprob, 4)}  p ${fmt(Math.exp(logprob ?? 0), 3)}` : 'environment token (mask 0)'}\nsegment ${segment.source}, turn ${segment.turn}${drifted.has(i) ? '\ndrift: a re-render differs here' : ''}`;
    place(hover, e);
  });
  body.addEventListener('mousemove', (e) => place(hover, e));
  body.addEventListener('mouseleave', () => (hover.hidden = true));
  const model = data.tokens.filter((t) => t[2] === 1);
  const low = model.filter((t) => (t[3] ?? 0) < Math.log(0.1)).length;
  const legend = h(
    'div',
    { class: 'toolbar' },
    h(
      'span',
      {},
      `${data.length} tokens: ${model.length} model (mask 1), ${data.length - model.length} environment (mask 0); ${low} with p < 0.1`,
    ),
    h(
      'label',
      {},
      'colour by',
      h(
        'select',
        {
          id: 'colour-mode',
          onchange: (e) => setParams({ color: (e.target as HTMLSelectElement).value === 'mask' ? 'mask' : null }),
        },
        h('option', { value: 'logprob', selected: mode === 'logprob' }, 'logprob'),
        h('option', { value: 'mask', selected: mode === 'mask' }, 'loss mask'),
      ),
    ),
    mode === 'logprob'
      ? h('span', {}, 'p 0 ', h('span', { class: 'legend-bar' }), ' 1 · environment grey')
      : h('span', {}, 'blue: trained (mask 1) · grey: environment (mask 0)'),
  );
  return h('section', { id: 'tokens-section' }, h('h2', {}, 'Tokens'), legend, body, driftPanel(data), hover);
}

/** `segment 1 of 3 · 120 tokens · then a new segment: sliding_window`. */
function segmentTitle(data: EpisodeTokens, index: number): string {
  const segment = data.episodeSegments[index]!;
  return `segment ${index + 1} of ${data.episodeSegments.length} · ${segment.length} tokens${segment.endedBecause ? ` · then a new segment: ${segment.endedBecause}` : ''} · trained with the episode's advantage`;
}

function driftPanel(data: EpisodeTokens): HTMLElement {
  if ('error' in data.drift)
    return h('div', { class: 'panel warn', id: 'drift' }, `drift audit failed: ${data.drift.error}`);
  const { toolsNote, segments } = data.drift;
  const note = toolsNote ? h('p', { class: 'warn' }, toolsNote) : null;
  if (segments.length === 1) return reportPanel(segments[0]!.report ?? data.drift.report, note, 'drift');
  // Each segment is audited against the conversation it rendered.
  return h(
    'div',
    { class: 'panel', id: 'drift' },
    note,
    ...segments.map(({ report }, i) =>
      h(
        'div',
        { class: 'segment-drift', 'data-episode-segment': i },
        h('div', {}, segmentTitle(data, i)),
        report ? reportPanel(report, null) : h('i', {}, 'not audited: the line does not record its conversation'),
      ),
    ),
  );
}

/** One audit's verdict and hunks; `id` on the panel when it is the episode's only one. */
function reportPanel(report: DriftReport, note: HTMLElement | null, id?: string): HTMLElement {
  if (report.identical)
    return h(
      'div',
      { class: 'panel', ...(id ? { id } : {}) },
      h(
        'b',
        { class: 'good' },
        `drift: none: re-rendering the conversation gives the same ${report.trajectoryTokens} tokens`,
      ),
      note,
    );
  return h(
    'div',
    { class: 'panel', ...(id ? { id } : {}) },
    h(
      'b',
      { class: 'warn' },
      `drift: ${report.hunkCount} place(s) where a re-render differs; ${report.changedModelTokens} model token(s) a text pipeline would train on wrongly (underlined red above)`,
    ),
    note,
    ...report.hunks.map((hunk, i) =>
      h(
        'div',
        { class: 'hunk' },
        h(
          'div',
          {},
          `hunk ${i + 1}: tokens ${hunk.trajectory.start}..${hunk.trajectory.end} (${hunk.modelTokens} model) vs re-rendered ${hunk.rerendered.start}..${hunk.rerendered.end}`,
        ),
        h('pre', { class: 'bad' }, `trajectory ${JSON.stringify(hunk.trajectory.text)}`),
        h('pre', { class: 'good' }, `re-render  ${JSON.stringify(hunk.rerendered.text)}`),
      ),
    ),
  );
}

/** Model tokens from red (p near 0) through yellow to green (p near 1); environment tokens grey. */
function tokenColor(mask: 0 | 1, logprob: number | null, mode: 'logprob' | 'mask'): string {
  if (!mask) return '#f3f4f6';
  if (mode === 'mask') return '#dbeafe';
  const p = Math.exp(logprob ?? 0);
  return `hsl(${Math.round(120 * p)}, 75%, ${p > 0.5 ? 75 : 70}%)`;
}

function place(box: HTMLElement, e: MouseEvent): void {
  box.style.left = `${Math.min(e.clientX + 12, window.innerWidth - 340)}px`;
  box.style.top = `${e.clientY + 16}px`;
}
