/**
 * The per-run token that guards every listener atk places off loopback (trainer control API, engines):
 * random per run, handed to the placed processes as ATK_RUN_TOKEN (and VLLM_API_KEY / --api-key for
 * vLLM and SGLang), and sent by every atk client as `Authorization: Bearer <token>`.
 */
import { randomBytes } from 'node:crypto';

export const RUN_TOKEN_ENV = 'ATK_RUN_TOKEN';

/** The Authorization header carrying the run token, or nothing when this run has none (local runs). */
export function runTokenHeaders(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const token = env[RUN_TOKEN_ENV];
  return token ? { authorization: `Bearer ${token}` } : {};
}

/**
 * The run's token, made (32 random bytes, hex) and put into `env` when there is none yet, so the clients
 * and the children atk starts all see the same one.
 */
export function ensureRunToken(env: NodeJS.ProcessEnv = process.env): string {
  return (env[RUN_TOKEN_ENV] ||= randomBytes(32).toString('hex'));
}
