import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { promises as dns } from 'node:dns';
import ipaddr from 'ipaddr.js';
import type { WebhookConfig } from '../config/load-config.ts';
import { AppError } from '../core/errors.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../core/webhooks/webhook-endpoint.ts';

/*
 * Server-side request forgery guard of webhook URLs (docs/contract.md Part B, Events and webhooks;
 * docs/security.md). A URL is checked when an endpoint is created or changed, and again before
 * every delivery, after DNS: the connection itself resolves the name through a lookup that
 * refuses forbidden addresses, so a name that resolves to a public address at one moment and
 * to an internal one the next (DNS rebinding) still cannot reach inside.
 */

/** The rules a webhook URL follows: configuration's `allowHttp` and `allowedNetworks`. */
export type UrlPolicy = Pick<WebhookConfig, 'allowHttp' | 'allowedNetworks'> & Partial<Pick<WebhookConfig, 'loopbackOnly'>>;

export { MAX_WEBHOOK_URL_LENGTH } from '../core/webhooks/webhook-endpoint.ts';

/** Longest wait for DNS when an endpoint is created or changed, in ms. */
const CREATE_DNS_TIMEOUT_MS = 2000;

/** A refusal by the guard; `message` says why, for the operator and the attempt log. */
export class UrlRefusedError extends Error {
  override readonly name = 'UrlRefusedError';
  readonly code = 'EWEBHOOKREFUSED';
}

/** The parsed CIDR ranges of a policy, cached per policy object. */
const parsedNetworks = new WeakMap<UrlPolicy, Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>>();

function networksOf(policy: UrlPolicy) {
  let networks = parsedNetworks.get(policy);
  if (!networks) {
    networks = policy.allowedNetworks.map((cidr) => ipaddr.parseCIDR(cidr));
    parsedNetworks.set(policy, networks);
  }
  return networks;
}

/** IPv6 ranges that carry an IPv4 address in their last 32 bits (RFC 4291 §2.5.5, RFC 6052, RFC 6145). */
const EMBEDDING_IPV4 = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052']);

/**
 * True for an IPv6 address that spells an IPv4 one: IPv4-compatible `::a.b.c.d` (deprecated,
 * but some stacks still route it to the IPv4 address), IPv4-mapped `::ffff:a.b.c.d`, and the
 * translated and NAT64 forms. Refused outright: no receiver needs them, and each is a way to
 * write a loopback or private IPv4 address past a check that reads only IPv6 ranges.
 */
function embedsIpv4(ip: ipaddr.IPv6): boolean {
  const parts = ip.parts;
  const compatible = parts.slice(0, 6).every((p) => p === 0) && (parts[6] !== 0 || (parts[7] ?? 0) > 1);
  return compatible || EMBEDDING_IPV4.has(ip.range());
}

/**
 * Why `address` (an IP literal) may not receive a webhook sent over `protocol`, or undefined
 * when it may: with `policy.loopbackOnly` nothing outside 127.0.0.0/8 and ::1; over `http:`
 * only loopback addresses; over `https:` public unicast addresses, and any address inside
 * `policy.allowedNetworks`. An IPv6 address that embeds an IPv4 one is always refused.
 */
export function addressRefusal(address: string, protocol: 'http:' | 'https:', policy: UrlPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return `"${address}" is not an IP address`;
  const ip = ipaddr.parse(address);
  if (ip instanceof ipaddr.IPv6 && embedsIpv4(ip)) return `${address} is an IPv6 form of an IPv4 address; use the IPv4 address`;
  const range = ip.range();
  if (policy.loopbackOnly && range !== 'loopback') return `${address} is outside loopback (WEBHOOK_LOOPBACK_ONLY)`;
  if (protocol === 'http:') {
    return range === 'loopback' ? undefined : `http:// webhooks may only go to loopback addresses; ${address} is ${range}`;
  }
  if (range === 'unicast') return undefined;
  const allowed = networksOf(policy).some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits));
  return allowed ? undefined : `${address} is a ${range} address, not allowed (WEBHOOK_ALLOWED_NETWORKS)`;
}

/** The host of a URL as an address literal (brackets of IPv6 removed), or undefined for a name. */
function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}

/**
 * Parses and checks a webhook URL's form: absolute `https:` (or `http:` when allowed), no
 * credentials, at most {@link MAX_WEBHOOK_URL_LENGTH} characters.
 * @throws UrlRefusedError saying what is wrong.
 */
export function parseWebhookUrl(raw: string, policy: UrlPolicy): URL {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new UrlRefusedError(`must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlRefusedError('must be an absolute URL');
  }
  if (url.protocol === 'http:' && !policy.allowHttp) throw new UrlRefusedError('must use https (http is off: WEBHOOK_ALLOW_HTTP)');
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UrlRefusedError('must use https');
  if (url.username || url.password) throw new UrlRefusedError('must not carry credentials');
  return url;
}

/**
 * Checks a webhook URL and every address its host resolves to now. A host name that does not
 * resolve is accepted (it may be published later; each delivery checks again).
 * @throws UrlRefusedError saying what is refused.
 */
export async function assertWebhookUrlAllowed(raw: string, policy: UrlPolicy): Promise<URL> {
  const url = parseWebhookUrl(raw, policy);
  const protocol = url.protocol as 'http:' | 'https:';
  const literal = literalAddress(url.hostname);
  let addresses: string[];
  if (literal !== undefined) addresses = [literal];
  else {
    // A slow resolver must not hold an admin request: past the timeout the name counts as unresolved.
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('DNS timeout')), CREATE_DNS_TIMEOUT_MS).unref());
    try {
      addresses = (await Promise.race([dns.lookup(url.hostname, { all: true, verbatim: true }), timeout])).map((a) => a.address);
    } catch {
      addresses = [];
    }
  }
  for (const address of addresses) {
    const refusal = addressRefusal(address, protocol, policy);
    if (refusal) throw new UrlRefusedError(`${url.hostname}: ${refusal}`);
  }
  return url;
}

/**
 * The `WebhookUrlCheck` of the admin API: {@link assertWebhookUrlAllowed} with refusals as
 * AppError `validation_failed` on field `url`.
 */
export function webhookUrlCheck(policy: UrlPolicy): (url: string) => Promise<void> {
  return async (url) => {
    try {
      await assertWebhookUrlAllowed(url, policy);
    } catch (error) {
      if (error instanceof UrlRefusedError) {
        throw new AppError('validation_failed', `The webhook URL is not allowed: ${error.message}.`, [{ field: 'url', message: error.message }]);
      }
      throw error;
    }
  };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect` that resolves as usual and then refuses (with
 * {@link UrlRefusedError}) when any address is not allowed for `protocol`: the delivery-time
 * check, made on the very addresses the socket connects to.
 */
export function guardedLookup(protocol: 'http:' | 'https:', policy: UrlPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const { address } of addresses) {
        const refusal = addressRefusal(address, protocol, policy);
        if (refusal) return callback(new UrlRefusedError(`${hostname}: ${refusal}`), []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}
