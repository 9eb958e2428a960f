/** Talking to the viewer's server: JSON routes and view links. */
import type { ApiAnswers, ApiError, ApiRoute } from '../src/view/api-types.js';

/** `GET /api/<route>?<params>` as JSON. @throws Error with the server's message on a non-200 answer. */
export async function api<R extends ApiRoute>(
  route: R,
  params: Record<string, string | number | undefined> = {},
): Promise<ApiAnswers[R]> {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') query.set(k, String(v));
  const res = await fetch(`/api/${route}?${query}`);
  const body = (await res.json()) as unknown;
  if (!res.ok) throw new Error((body as Partial<ApiError>).error ?? `${res.status} ${res.statusText}`);
  return body as ApiAnswers[R];
}

/** The URL fragment of a view: `#/episodes?run=...`; empty parameters are left out so links stay short. */
export function link(view: string, params: Record<string, string | number | boolean | undefined | null> = {}): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '' && v !== false) query.set(k, v === true ? '1' : String(v));
  const text = query.toString();
  return `#/${view}${text ? `?${text}` : ''}`;
}

/** The current view and its parameters, from the URL fragment. */
export function currentRoute(): { view: string; params: URLSearchParams } {
  const hash = location.hash.replace(/^#\/?/, '');
  const [view, query] = hash.split('?', 2) as [string, string | undefined];
  return { view: view || 'runs', params: new URLSearchParams(query ?? '') };
}

/** Replaces some parameters of the current view's URL (a filter changed), which re-renders it. */
export function setParams(changes: Record<string, string | number | boolean | undefined | null>): void {
  const { view, params } = currentRoute();
  const next: Record<string, string | number | boolean | undefined | null> = Object.fromEntries(params);
  Object.assign(next, changes);
  location.hash = link(view, next);
}
