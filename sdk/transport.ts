import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import createOpenApiClient, { type Client } from 'openapi-fetch';
import { Agent, fetch as undiciFetch, Request as UndiciRequest, type Dispatcher } from 'undici';
import { retryPolicy, type RetryOptions, type RetryPolicy } from './retry.ts';
import { callWithRetries, type CallOptions, type Outcome } from './retry-loop.ts';
import type { paths } from './schema.ts';

/** Options every wum client takes. */
export interface TransportOptions {
  /**
   * Where the service is: scheme, host and port, e.g. `http://acme.localhost:3000` for a
   * workspace or `http://localhost:3000` for the admin API. A path is kept as a prefix (a
   * service behind a reverse proxy at `https://example.com/wum`).
   */
  readonly baseUrl: string;
  /** Retry policy of 429, 503 and safe-to-repeat failures; `false` turns retries off. */
  readonly retry?: RetryOptions | false;
  /** Time one attempt may take before it fails with `timeout`, in ms. Default 30 000. */
  readonly timeoutMs?: number;
  /** `User-Agent` of the requests. Default `wum-sdk`. */
  readonly userAgent?: string;
  /**
   * The undici dispatcher to send with (a proxy, custom TLS). Default: a keep-alive Agent that
   * resolves `localhost` and `*.localhost` to the loopback addresses.
   */
  readonly dispatcher?: Dispatcher;
  /**
   * An IP address (v4 or v6) to send every request to, at the URL's port, instead of
   * resolving the URL's host name; the `Host` header and the TLS server name stay the URL's
   * (as curl's `--connect-to`). For a workspace whose name does not resolve yet, or a service
   * reached by address. Not combinable with `dispatcher`.
   */
  readonly connectTo?: string;
}

/** True for `localhost` and names under `.localhost`, which are always loopback (RFC 6761 §6.3). */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

const LOOPBACK: readonly LookupAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/**
 * `dns.lookup` that answers `localhost` and `*.localhost` with 127.0.0.1 and ::1 itself, as
 * curl and browsers do, instead of asking the system resolver (which often does not know
 * `acme.localhost`). Every other name goes to `dns.lookup`.
 */
export function loopbackAwareLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  if (!isLoopbackName(hostname)) {
    dnsLookup(hostname, options, callback as never);
    return;
  }
  const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
  const addresses = LOOPBACK.filter((a) => !family || a.family === family);
  if (options.all) callback(null, addresses);
  else callback(null, addresses[0]!.address, addresses[0]!.family);
}

/**
 * A `dns.lookup` that answers every name with `address` (an IP literal), asking no resolver.
 * @throws TypeError when `address` is not an IPv4 or IPv6 address.
 */
export function fixedAddressLookup(address: string): (hostname: string, options: LookupOptions, callback: LookupCallback) => void {
  const family = isIP(address);
  if (family === 0) throw new TypeError(`connectTo must be an IP address such as 127.0.0.1, not "${address}"`);
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/**
 * The default dispatcher: keep-alive connections, `*.localhost` resolved to loopback, or every
 * name to `connectTo` when given (see {@link TransportOptions.connectTo}).
 * @throws TypeError when `connectTo` is not an IP address.
 */
export function createLoopbackAwareAgent(connectTo?: string): Agent {
  return new Agent({
    connect: { lookup: connectTo === undefined ? loopbackAwareLookup : fixedAddressLookup(connectTo) },
    // Node gives each address of a name 250 ms to connect before trying the next (happy
    // eyeballs); on a loaded machine 127.0.0.1 can take longer, and the next address (::1,
    // where a server bound to IPv4 refuses) then fails the call. A refused address still
    // fails at once, so a longer attempt only delays the fallback from a silent address.
    autoSelectFamily: true,
    autoSelectFamilyAttemptTimeout: 1000,
  });
}

/** The base URL as given, without a trailing slash or an API path prefix a user may have added. */
function normalizeBaseUrl(baseUrl: string, apiPrefix: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`baseUrl must be an absolute http(s) URL such as http://acme.localhost:3000, not "${baseUrl}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`baseUrl must use http or https, not "${url.protocol}"`);
  }
  let path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith(apiPrefix)) path = path.slice(0, -apiPrefix.length);
  return `${url.origin}${path}`;
}

export type { CallOptions } from './retry-loop.ts';

/** An openapi-fetch client with retries, timeouts and error mapping around it. */
export interface Transport {
  readonly api: Client<paths>;
  readonly baseUrl: string;
  /**
   * Runs `attempt` (one openapi-fetch call, given the abort signal of its timeout) until it
   * succeeds or the retry policy gives up.
   * @returns the parsed body and the response of the successful attempt.
   * @throws WumApiError for an error response or when no response arrived.
   */
  call<T extends Outcome>(
    operation: string,
    options: CallOptions,
    attempt: (signal: AbortSignal) => Promise<T>,
  ): Promise<{ data: NonNullable<T['data']> | undefined; response: Response }>;
  /** Closes the connections of the default dispatcher (no-op for a dispatcher you passed). */
  close(): Promise<void>;
}

/**
 * Builds the transport of a client: openapi-fetch over undici's own `fetch` and dispatcher,
 * with fixed headers (credentials) and the retry policy of {@link RetryOptions}.
 */
export function createTransport(options: TransportOptions, headers: Record<string, string>, apiPrefix: string): Transport {
  const baseUrl = normalizeBaseUrl(options.baseUrl, apiPrefix);
  if (options.dispatcher && options.connectTo !== undefined) throw new TypeError('pass connectTo or dispatcher, not both');
  const ownDispatcher = options.dispatcher ? undefined : createLoopbackAwareAgent(options.connectTo);
  const dispatcher = options.dispatcher ?? ownDispatcher!;
  const policy: RetryPolicy = retryPolicy(options.retry);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const api = createOpenApiClient<paths>({
    baseUrl,
    headers: { 'User-Agent': options.userAgent ?? 'wum-sdk', Accept: 'application/json', ...headers },
    // openapi-fetch builds undici Requests, sent by undici's fetch with our dispatcher.
    Request: UndiciRequest as unknown as typeof Request,
    fetch: ((request: UndiciRequest) => undiciFetch(request, { dispatcher })) as unknown as (input: Request) => Promise<Response>,
  });

  async function call<T extends Outcome>(operation: string, callOptions: CallOptions, attempt: (signal: AbortSignal) => Promise<T>) {
    const label = `${operation.split(' ', 1)[0]} ${baseUrl}${operation.slice(operation.indexOf(' ') + 1)}`;
    return callWithRetries(label, policy, timeoutMs, callOptions, attempt);
  }

  return {
    api,
    baseUrl,
    call,
    async close() {
      await ownDispatcher?.close();
    },
  };
}

/** Page size of the iterators when the caller gives none: the largest the API allows. */
export const ITERATION_PAGE_SIZE = 100;

/**
 * Every item of a paginated listing, page by page from page 1, until the empty page that marks
 * the end (docs/contract.md Part A: "An empty users array means the end").
 */
export async function* everyItem<T>(fetchPage: (pageNumber: number) => Promise<readonly T[]>): AsyncGenerator<T, void, undefined> {
  for (let page = 1; ; page += 1) {
    const items = await fetchPage(page);
    if (items.length === 0) return;
    yield* items;
  }
}

/**
 * Every event of a cursor-paginated audit listing (docs/api.md, "Audit trail"): pages of
 * `page_size` (default {@link ITERATION_PAGE_SIZE}) from past `query.starting_after`, each
 * next one past the last event listed, until a page says it ends the listing
 * (`next_cursor` null).
 */
export async function* everyEvent<Q extends { page_size?: number; starting_after?: number }, E extends { id: number }>(
  query: Q,
  fetchPage: (query: Q) => Promise<{ audit_events: E[]; next_cursor: number | null }>,
): AsyncGenerator<E, void, undefined> {
  let cursor = query.starting_after;
  const page_size = query.page_size ?? ITERATION_PAGE_SIZE;
  for (;;) {
    const page = await fetchPage({ ...query, page_size, ...(cursor === undefined ? {} : { starting_after: cursor }) });
    yield* page.audit_events;
    if (page.next_cursor === null) return;
    cursor = page.next_cursor;
  }
}

/**
 * Runs `request` with a signal that follows `timeout` until the answer's headers arrive, and no
 * longer: a streamed body (an export) may then take longer than one call's timeout.
 */
export async function untilAnswered<T>(timeout: AbortSignal, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const follow = () => controller.abort(timeout.reason);
  timeout.addEventListener('abort', follow, { once: true });
  try {
    return await request(controller.signal);
  } finally {
    timeout.removeEventListener('abort', follow);
  }
}
