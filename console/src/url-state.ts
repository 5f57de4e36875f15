/*
 * Page state kept in the URL's query (filters, sort, page), so back/forward and a shared link
 * restore it (docs/console.md). Built on wouter's useSearchParams.
 */
import { useLocation, useSearchParams } from 'wouter-preact';

/** A change of query parameters: a value sets one, `undefined` or `''` removes it. */
export type ParamChange = Readonly<Record<string, string | number | undefined>>;

/** What {@link useUrlParams} returns. */
export interface UrlParams {
  readonly params: URLSearchParams;
  /** Navigates to the same page with `change` applied; `replace` keeps it out of the history. */
  readonly update: (change: ParamChange, options?: { replace?: boolean }) => void;
  /** The address of the same page with `change` applied, for links. */
  readonly hrefWith: (change: ParamChange) => string;
}

function applied(params: URLSearchParams, change: ParamChange): URLSearchParams {
  const next = new URLSearchParams(params);
  for (const [name, value] of Object.entries(change)) {
    if (value === undefined || value === '') next.delete(name);
    else next.set(name, String(value));
  }
  return next;
}

/** The current query parameters and ways to change them. */
export function useUrlParams(): UrlParams {
  const [location] = useLocation();
  const [params, setParams] = useSearchParams();
  return {
    params,
    update: (change, options) => setParams((previous) => applied(previous, change), options),
    hrefWith: (change) => {
      const query = applied(params, change).toString();
      return query ? `${location}?${query}` : location;
    },
  };
}

/** A positive integer parameter, or `fallback` when absent or not one. */
export function positiveParam(params: URLSearchParams, name: string, fallback: number): number {
  const value = Number(params.get(name));
  return Number.isInteger(value) && value >= 1 ? value : fallback;
}

/** A parameter that must be one of `allowed`, else `fallback`. */
export function choiceParam<T extends string>(params: URLSearchParams, name: string, allowed: readonly T[], fallback: T): T {
  const value = params.get(name) as T | null;
  return value !== null && allowed.includes(value) ? value : fallback;
}
