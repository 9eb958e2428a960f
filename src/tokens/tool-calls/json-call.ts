import { echo, malformed, namedCall } from './call-result.js';
import type { ParsedToolCall } from './types.js';

const NAME = /"name"\s*:\s*"([^"\\]+)"/;

/**
 * A call written as one JSON object `{"name": ..., "<argumentsKey>": {...}}` (Hermes, Llama 3, Mistral's
 * list form). Strict: no JSON repair. `argumentKeys` lists the fields that may hold the arguments, at most
 * one of them present; absent, the call has no arguments, unless `argumentsRequired` (Llama 3's calls
 * always carry them, and vLLM reads a call without them as no call).
 */
export function parseJsonCall(
  body: string,
  raw: string,
  argumentKeys: readonly string[] = ['arguments'],
  argumentsRequired = false,
): ParsedToolCall {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return malformed(
      'bad_json',
      raw,
      `the tool call is not valid JSON (${echo((error as Error).message)})`,
      salvageName(body),
    );
  }
  return jsonCall(value, raw, argumentKeys, body, argumentsRequired);
}

/** A parsed JSON value as a call object (see `parseJsonCall`); `source` is the text names are salvaged from. */
export function jsonCall(
  value: unknown,
  raw: string,
  argumentKeys: readonly string[] = ['arguments'],
  source = raw,
  argumentsRequired = false,
): ParsedToolCall {
  const call = value as Record<string, unknown> | null;
  const keys = argumentKeys.map((k) => `"${k}"`).join(' or ');
  if (
    typeof call !== 'object' ||
    call === null ||
    Array.isArray(call) ||
    typeof call.name !== 'string' ||
    call.name === ''
  )
    return malformed(
      'bad_call',
      raw,
      `a tool call must be a JSON object with a string "name" and an object ${keys}`,
      salvageName(source),
    );
  const present = argumentKeys.filter((k) => call[k] !== undefined);
  if (present.length > 1)
    return malformed(
      'bad_call',
      raw,
      `the call to '${echo(call.name)}' has both ${argumentKeys.map((k) => `"${k}"`).join(' and ')}; write one`,
      call.name,
    );
  if (argumentsRequired && present.length === 0)
    return malformed('bad_call', raw, `the call to '${echo(call.name)}' has no ${keys}: write {} for none`, call.name);
  const key = present[0] ?? argumentKeys[0]!;
  return namedCall(call.name, call[key] ?? {}, raw, key);
}

/** The `"name"` read from broken JSON, so the error can say which tool the model meant. */
export function salvageName(body: string): string | undefined {
  return NAME.exec(body)?.[1];
}
