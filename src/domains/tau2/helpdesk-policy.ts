/**
 * The help-desk policy as a check on a finished conversation: each rule of HELPDESK_POLICY the agent
 * broke, once per offending tool call. The reward reports them (`policy_violations`); the score is
 * the final database state, as in tau2, so a violation costs reward only where it changes that state
 * (cancelling before the user could change their mind).
 */

const ORDER_IDS = /#\d+/g;
const CHANGES = new Set(['set_shipping', 'cancel_order']);

/** The rules broken in `messages` (Strands JSON or chat form), in the order they were broken. */
export function helpdeskPolicyViolations(messages: readonly unknown[]): string[] {
  const violations: string[] = [];
  const given = new Set<string>();
  const lookedUp = new Map<string, string>();
  let confirmAsked = false;
  let confirmed = false;
  let pendingLookup: string | undefined;
  for (const block of blocks(messages)) {
    if (block.kind === 'user') {
      for (const [id] of block.text.matchAll(ORDER_IDS)) given.add(id);
      confirmed = confirmAsked && /\byes\b/i.test(block.text);
      confirmAsked = false;
    } else if (block.kind === 'agent') {
      confirmAsked = /confirm/i.test(block.text);
      confirmed = false;
    } else if (block.kind === 'result') {
      if (pendingLookup !== undefined && block.ok) lookedUp.set(pendingLookup, block.text);
      pendingLookup = undefined;
    } else if (block.kind === 'call') {
      const id = typeof block.input.order_id === 'string' ? block.input.order_id : undefined;
      pendingLookup = block.name === 'get_order' ? id : undefined;
      if (id === undefined) continue;
      if (!given.has(id)) violations.push(`${block.name} on ${id}, an order id the user never gave`);
      if (CHANGES.has(block.name) && !lookedUp.has(id)) violations.push(`${block.name} on ${id} before looking it up`);
      if (block.name !== 'cancel_order') continue;
      if (lookedUp.get(id)?.includes('"delivered"'))
        violations.push(`cancel_order on ${id}, a delivered order (policy: transfer)`);
      else if (!confirmed) violations.push(`cancel_order on ${id} without the user's confirmation`);
    }
  }
  return violations;
}

type Block =
  | { readonly kind: 'user' | 'agent'; readonly text: string }
  | { readonly kind: 'call'; readonly name: string; readonly input: Readonly<Record<string, unknown>> }
  | { readonly kind: 'result'; readonly ok: boolean; readonly text: string };

/** The conversation as a flat sequence of texts, calls and results. */
function* blocks(messages: readonly unknown[]): Generator<Block> {
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role !== 'user' && role !== 'assistant') continue;
    const kind = role === 'user' ? 'user' : 'agent';
    if (typeof content === 'string') {
      yield { kind, text: content };
      continue;
    }
    for (const part of Array.isArray(content) ? (content as Record<string, unknown>[]) : []) {
      if (typeof part.text === 'string') yield { kind, text: part.text };
      const use = part.toolUse as { name?: unknown; input?: unknown } | undefined;
      if (use) {
        const input = typeof use.input === 'object' && use.input !== null ? use.input : {};
        yield { kind: 'call', name: String(use.name), input: input as Record<string, unknown> };
      }
      const result = part.toolResult as { status?: unknown; content?: unknown } | undefined;
      if (result) {
        const texts = Array.isArray(result.content) ? (result.content as { text?: unknown }[]) : [];
        const text = texts.map((t) => (typeof t.text === 'string' ? t.text : '')).join('');
        yield { kind: 'result', ok: result.status !== 'error' && !text.startsWith('Error'), text };
      }
    }
  }
}
