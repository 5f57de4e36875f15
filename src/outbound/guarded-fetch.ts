import type { Agent, request as undiciRequest } from 'undici';
import { assertLiteralAllowed, guardedLookup, OutboundRefusedError, parseOutboundUrl, type OutboundPolicy } from './outbound-guard.ts';

/** The most of an answer read: a discovery document, a key set or a token response is far smaller. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

/** Longest wait for a connection to open, in ms (the caller's signal bounds the whole exchange). */
const CONNECT_TIMEOUT_MS = 10_000;

/** What a request through {@link guardedFetch} may carry: the `fetch` options openid-client passes. */
export interface GuardedFetchOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: ArrayBuffer | ReadableStream | string | Uint8Array | URLSearchParams | null;
  readonly signal?: AbortSignal;
}

/** A `fetch` that only reaches what the outbound policy allows. */
export type GuardedFetch = (url: string, options: GuardedFetchOptions) => Promise<Response>;

type Transport = { request: typeof undiciRequest; agents: Record<'http:' | 'https:', Agent> };

/** One pair of agents per policy: their connections are kept alive between requests. */
const transports = new WeakMap<OutboundPolicy, Promise<Transport>>();

function transportOf(policy: OutboundPolicy): Promise<Transport> {
  let transport = transports.get(policy);
  if (!transport) {
    // undici is loaded with the first request: a process that never calls out never needs it.
    transport = import('undici').then(({ Agent, request }) => {
      const agent = (protocol: 'http:' | 'https:') => new Agent({ connect: { lookup: guardedLookup(protocol, policy), timeout: CONNECT_TIMEOUT_MS } });
      return { request, agents: { 'http:': agent('http:'), 'https:': agent('https:') } };
    });
    transports.set(policy, transport);
  }
  return transport;
}

/** A request body as undici takes it. */
function bodyOf(body: GuardedFetchOptions['body']): string | Uint8Array | undefined {
  if (body === null || body === undefined) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof URLSearchParams) return body.toString();
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError('a streamed request body is not supported');
}

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for clients that accept one (openid-client's `customFetch`) whose every request
 * passes the outbound guard (docs/security.md, "Outbound connections"): the URL's form
 * (https, or http where allowed), a literal address checked before connecting, a host name
 * resolved through the guarded lookup at connect time, redirects never followed (a 3xx answer
 * is a refusal), at most 1 MiB of answer read. Returns a standard `Response` whose body is
 * already in memory.
 * @throws OutboundRefusedError (kind `url`, `http`, `address` or `redirect`); the network error
 * of a connection that fails; the signal's reason when it aborts.
 */
export function guardedFetch(policy: OutboundPolicy): GuardedFetch {
  return async (raw, options) => {
    const url = parseOutboundUrl(raw, policy);
    assertLiteralAllowed(url, policy);
    const { request, agents } = await transportOf(policy);
    const body = bodyOf(options.body);
    const response = await request(url, {
      method: (options.method ?? 'GET') as 'GET',
      headers: options.headers ?? {},
      ...(body === undefined ? {} : { body }),
      dispatcher: agents[url.protocol as 'http:' | 'https:'],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (response.statusCode >= 300 && response.statusCode < 400) {
      await response.body.dump().catch(() => {});
      throw new OutboundRefusedError('redirect', `${url.host} answered ${response.statusCode} (a redirect), which is not followed`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_RESPONSE_BYTES) {
        response.body.destroy();
        throw new Error(`${url.host} answered with more than ${MAX_RESPONSE_BYTES} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
    }
    return new Response(NULL_BODY_STATUSES.has(response.statusCode) ? null : Buffer.concat(chunks), { status: response.statusCode, headers });
  };
}
