/**
 * JSON with Python `json.dumps` separators (`{"a": 1, "b": [1, 2]}`), as Python pipelines and Jinja's
 * `tojson` write it, so tool output and rendered tool calls read the same as in training data made there.
 */
export function pythonJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(', ')}}`;
}
