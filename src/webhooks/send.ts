import type { Agent } from 'undici';
import { boundedLru } from '../core/bounded-lru.ts';
import { assertLiteralAllowed, guardedLookup } from '../outbound/outbound-guard.ts';
import { parseWebhookUrl, type UrlPolicy } from './url-guard.ts';

/** What one POST to a receiver came to: its status, or why none came. */
export type SendResult = { readonly status: number } | { readonly error: string };

/** Sends webhook POSTs through connections whose addresses the SSRF guard checked. */
export interface WebhookSender {
  send(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
  close(): Promise<void>;
}

/** The most of a receiver's answer read (then dropped): wum needs only its status. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** Endpoint URLs whose form and literal address were checked, kept: far more than a workspace has endpoints. */
const CHECKED_URLS = 1024;

/** Where a checked URL sends: its agent's protocol, origin and path with query. */
interface Target {
  readonly protocol: 'http:' | 'https:';
  readonly origin: string;
  readonly path: string;
}

/** The message of an error and its causes, e.g. `fetch failed: connect ECONNREFUSED 127.0.0.1:9`. */
function describe(error: unknown): string {
  const parts: string[] = [];
  for (let e = error as { message?: string; cause?: unknown } | undefined; e && parts.length < 4; e = e.cause as typeof e) {
    if (e.message && !parts.includes(e.message)) parts.push(e.message);
  }
  return parts.join(': ') || String(error);
}

/**
 * A sender for `policy`: every URL is checked again (scheme, literal address), names are
 * resolved by a lookup that refuses forbidden addresses at connect time, and each attempt
 * ends after `timeoutMs` (docs/contract.md: 15 s) whatever the receiver does. Never throws: failures
 * come back as `{error}`.
 */
export function createWebhookSender(policy: UrlPolicy, timeoutMs: number): WebhookSender {
  // undici is loaded with the first delivery: a process with no endpoint never needs it.
  let transport: Promise<Record<'http:' | 'https:', Agent>> | undefined;
  const load = () =>
    (transport ??= import('undici').then(({ Agent }) => {
      const agent = (protocol: 'http:' | 'https:') =>
        new Agent({
          connect: { lookup: guardedLookup(protocol, policy), timeout: timeoutMs },
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          connections: 32,
        });
      return { 'http:': agent('http:'), 'https:': agent('https:') };
    }));
  // The policy is fixed for the sender's life, so a URL that passed its checks passes them
  // again: each is parsed and checked once, not on every delivery. Names are still checked at
  // each connection by the guarded lookup.
  const checked = boundedLru<string, Target>(CHECKED_URLS);
  const targetOf = (raw: string): Target => {
    let target = checked.get(raw);
    if (!target) {
      const url = parseWebhookUrl(raw, policy);
      assertLiteralAllowed(url, policy);
      target = { protocol: url.protocol as 'http:' | 'https:', origin: url.origin, path: `${url.pathname}${url.search}` };
      checked.set(raw, target);
    }
    return target;
  };
  return {
    async send(raw, headers, body) {
      // One timer per attempt, cleared when it ends: AbortSignal.timeout's signal and timer
      // would live on for the whole timeout after every attempt.
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
      try {
        const { protocol, origin, path } = targetOf(raw);
        const agents = await load();
        const response = await agents[protocol].request({
          origin,
          path,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'wum-webhooks/1', ...headers },
          body,
          signal: abort.signal,
          // A redirect is not followed (undici's request never does): it counts as a failed attempt.
        });
        await response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => {});
        return { status: response.statusCode };
      } catch (error) {
        const name = (error as Error).name;
        if (name === 'TimeoutError' || name === 'AbortError') return { error: `no answer within ${timeoutMs} ms` };
        return { error: describe(error) };
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      if (!transport) return;
      const agents = await transport;
      await Promise.all(Object.values(agents).map((a) => a.close()));
    },
  };
}
