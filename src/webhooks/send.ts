import type { Agent, Dispatcher } from 'undici';
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
 * A sender for `policy`: every URL is checked (scheme, literal address) before its first
 * delivery, names are resolved by a lookup that refuses forbidden addresses at connect time,
 * and each attempt ends after `timeoutMs` (docs/contract.md: 15 s) whatever the receiver does.
 * An attempt's result is the answer's status as soon as its head arrives. Never throws:
 * failures come back as `{error}`.
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
  /** Why an attempt that timed out failed. */
  const noAnswer = `no answer within ${timeoutMs} ms`;
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
      let target: Target;
      try {
        target = targetOf(raw);
      } catch (error) {
        return { error: describe(error) };
      }
      const agents = await load();
      return new Promise<SendResult>((resolve) => {
        // The attempt's outcome is its status, known once the answer's head has arrived; the
        // body is then read and dropped (up to MAX_RESPONSE_BYTES) so the connection can serve
        // the next delivery, and a body that stalls is cut at the timeout like the rest.
        let outcome: SendResult | undefined;
        let received = 0;
        let controller: Dispatcher.DispatchController | undefined;
        const decide = (result: SendResult) => {
          if (outcome) return;
          outcome = result;
          resolve(result);
        };
        const end = (result: SendResult) => {
          clearTimeout(timer);
          decide(result);
        };
        // One timer per attempt, cleared when it ends: the attempt ends at timeoutMs whatever
        // the receiver does (connect, the answer's head, a body that stalls).
        const timer = setTimeout(() => {
          decide({ error: noAnswer });
          controller?.abort(new Error(noAnswer));
        }, timeoutMs);
        // undici's low-level interface: no stream, promise or abort signal per attempt
        // (docs/performance.md, "Webhooks").
        agents[target.protocol].dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: 'POST',
            headers: { 'content-type': 'application/json', 'user-agent': 'wum-webhooks/1', ...headers },
            body,
            // A redirect is not followed (dispatch never does): it counts as a failed attempt.
          },
          {
            onRequestStart(c) {
              controller = c;
              if (outcome) c.abort(new Error(noAnswer));
            },
            onResponseStart(_c, statusCode) {
              // 1xx heads come before the final one and decide nothing.
              if (statusCode >= 200) decide({ status: statusCode });
            },
            onResponseData(c, chunk) {
              received += chunk.length;
              if (received > MAX_RESPONSE_BYTES) c.abort(new Error('answer longer than is read'));
            },
            onResponseEnd() {
              end({ error: 'no status' });
            },
            onResponseError(_c, error) {
              end({ error: describe(error) });
            },
          },
        );
      });
    },
    async close() {
      if (!transport) return;
      const agents = await transport;
      await Promise.all(Object.values(agents).map((a) => a.close()));
    },
  };
}
