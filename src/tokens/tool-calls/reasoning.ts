/** The markers of a reasoning block and, for formats that wrap calls in tags, how to tell a call inside it. */
export interface ReasoningMarkers {
  readonly open: string;
  readonly close: string;
  /** A call's tags and a test that the text between them is a call (and not a mention of the tag). */
  readonly call?: { readonly open: string; readonly close: string; readonly isCall: (body: string) => boolean };
}

export const THINK: ReasoningMarkers = { open: '<think>', close: '</think>' };

/**
 * A leading reasoning block (`<think>…</think>`); an unclosed one (cut by the length limit) is all reasoning.
 * Reasoning ends at the first closing marker that is not inside a tool call: one quoted in a closed call
 * (an argument holding the tag) is part of the call, which runs or is answered like any other.
 */
export function splitReasoning(text: string, markers: ReasoningMarkers = THINK): { reasoning: string; rest: string } {
  const close = reasoningEnd(text, markers);
  if (close >= 0) {
    const before = text.slice(0, close);
    const open = before.indexOf(markers.open);
    return {
      reasoning: (open >= 0 ? before.slice(open + markers.open.length) : before).trim(),
      rest: text.slice(close + markers.close.length),
    };
  }
  const trimmed = text.trimStart();
  if (trimmed.startsWith(markers.open)) return { reasoning: trimmed.slice(markers.open.length).trim(), rest: '' };
  return { reasoning: '', rest: text };
}

/**
 * Index of the first closing marker outside a tool call, or -1. A marker is inside a call when it lies
 * between a call's opening tag and the closing tag after it and the text between them is a call; a tag
 * merely mentioned in the reasoning ("I will write <tool_call> ...") is no call.
 */
function reasoningEnd(text: string, markers: ReasoningMarkers): number {
  const { call } = markers;
  for (let from = 0; ; ) {
    const close = text.indexOf(markers.close, from);
    if (close < 0 || !call) return close;
    const open = text.lastIndexOf(call.open, close);
    const end = open < 0 ? -1 : text.indexOf(call.close, open);
    if (end < close || !call.isCall(text.slice(open + call.open.length, end))) return close;
    from = end + call.close.length;
  }
}
