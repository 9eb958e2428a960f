/** `{{ name }}` placeholders: letters, digits, `_` and `.`, with optional spaces inside the braces. */
const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.]+)\s*\}\}/g;

/**
 * Replaces every `{{name}}` in `template` with `lookup(name)`: strings as they are, other values
 * as JSON. A placeholder whose lookup is undefined stays as written.
 */
export function fillPlaceholders(template: string, lookup: (name: string) => unknown): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const value = lookup(name);
    if (value === undefined) return whole;
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** The distinct placeholder names of `template`, in order of first use. */
export function placeholderNames(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((m) => m[1]!))];
}
