/**
 * What a page of the viewer is: a function that draws one route into the page and says which runs
 * it shows. The pages and the router (main.ts) both take the type from here.
 */

/** What a view draws into, and which runs it shows (a change to any of them re-renders it). */
export interface ViewContext {
  readonly main: HTMLElement;
  crumbs(...items: (readonly [string, string] | string)[]): void;
}

/** A view: renders itself; returns the runs it depends on ('*': every run). */
export type View = (params: URLSearchParams, context: ViewContext) => Promise<readonly string[] | '*'>;
