import { ProviderError } from '../errors/index.js';

/**
 * GETs JSON from `url`.
 * @throws ProviderError on an HTTP or network failure or a body that is not JSON.
 */
export async function fetchJson(url: string, signal?: AbortSignal): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { signal });
  } catch (error) {
    throw new ProviderError(`request to ${url} failed: ${(error as Error).message}`, { cause: error });
  }
  if (!response.ok) throw new ProviderError(`request to ${url} failed: HTTP ${response.status}`);
  try {
    return await response.json();
  } catch (error) {
    throw new ProviderError(`response of ${url} is not JSON`, { cause: error });
  }
}
