/**
 * A request the gateway refuses, answered in OpenAI's error shape
 * (`{"error": {"message", "type", "param", "code"}}`) so every OpenAI client raises its usual exception.
 */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'GatewayError';
  }

  /** OpenAI's error body: `type` is what the official clients switch on. */
  toBody(): { error: { message: string; type: string; param: string | null; code: string } } {
    const type =
      this.status === 401
        ? 'authentication_error'
        : this.status === 404
          ? 'not_found_error'
          : this.status >= 500
            ? 'server_error'
            : 'invalid_request_error';
    return { error: { message: this.message, type, param: this.param, code: this.code } };
  }
}

/** 400 for a request field atk cannot honour; the message names the field. */
export function badRequest(param: string, message: string, code = 'invalid_request'): GatewayError {
  return new GatewayError(400, code, `${param}: ${message}`, param);
}
