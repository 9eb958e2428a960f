/**
 * `text` cut to its first `max` characters with a note of how much was cut. Whatever the model
 * wrote and is shown back (a tool name, a broken call) goes through this, so an error result never
 * grows with the size of the mistake it reports.
 */
export function clipEcho(text: string, max = ECHO_MAX_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}... [${text.length - max} more characters]` : text;
}

/** Characters of model-written text repeated in an error message. */
export const ECHO_MAX_CHARS = 200;
