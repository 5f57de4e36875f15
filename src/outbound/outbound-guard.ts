import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { promises as dns } from 'node:dns';
import ipaddr from 'ipaddr.js';
import type { OutboundPolicy } from '../config/load-config.ts';

/*
 * Server-side request forgery guard of every URL the server calls on an operator's or a
 * workspace's say (webhook receivers, identity providers): docs/security.md, "Outbound
 * connections". A URL is checked when it is configured and again at every connection, after
 * DNS: the connection resolves the name through a lookup that refuses forbidden addresses, so
 * a name that resolves to a public address at one moment and to an internal one the next
 * (DNS rebinding) still cannot reach inside.
 */

export type { OutboundPolicy } from '../config/load-config.ts';

/** Longest wait for DNS when a URL is configured, in ms. */
const CONFIGURE_DNS_TIMEOUT_MS = 2000;

/**
 * Why the guard refused: `url` (not an absolute http(s) URL without credentials), `http`
 * (plain http where it is not allowed), `address` (a host or resolved address outside what the
 * policy allows), `redirect` (the target answered with a redirect, never followed).
 */
export type RefusalKind = 'url' | 'http' | 'address' | 'redirect';

/** A refusal by the guard; `message` says why, for the operator and the logs. */
export class OutboundRefusedError extends Error {
  override readonly name = 'OutboundRefusedError';
  readonly code = 'EOUTBOUNDREFUSED';
  constructor(
    readonly kind: RefusalKind,
    message: string,
  ) {
    super(message);
  }
}

/** The parsed CIDR ranges of a policy, cached per policy object. */
const parsedNetworks = new WeakMap<OutboundPolicy, Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>>();

function networksOf(policy: OutboundPolicy) {
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

/** {@link addressRefusal} with the kind of refusal: `http` for plain http off loopback, else `address`. */
function refusalOf(address: string, protocol: 'http:' | 'https:', policy: OutboundPolicy): OutboundRefusedError | undefined {
  if (!ipaddr.isValid(address)) return new OutboundRefusedError('address', `"${address}" is not an IP address`);
  const ip = ipaddr.parse(address);
  if (ip instanceof ipaddr.IPv6 && embedsIpv4(ip)) {
    return new OutboundRefusedError('address', `${address} is an IPv6 form of an IPv4 address; use the IPv4 address`);
  }
  const range = ip.range();
  if (protocol === 'http:') {
    return range === 'loopback' ? undefined : new OutboundRefusedError('http', `http:// may only go to loopback addresses; ${address} is ${range}`);
  }
  if (policy.loopbackOnly && range !== 'loopback') return new OutboundRefusedError('address', `${address} is outside loopback (WEBHOOK_LOOPBACK_ONLY)`);
  if (range === 'unicast') return undefined;
  const allowed = networksOf(policy).some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits));
  return allowed ? undefined : new OutboundRefusedError('address', `${address} is a ${range} address, not allowed (OUTBOUND_ALLOWED_NETWORKS)`);
}

/**
 * Why `address` (an IP literal) may not be connected to over `protocol`, or undefined when it
 * may: with `policy.loopbackOnly` nothing outside 127.0.0.0/8 and ::1; over `http:` only
 * loopback addresses; over `https:` public unicast addresses, and any address inside
 * `policy.allowedNetworks`. An IPv6 address that embeds an IPv4 one is always refused.
 */
export function addressRefusal(address: string, protocol: 'http:' | 'https:', policy: OutboundPolicy): string | undefined {
  return refusalOf(address, protocol, policy)?.message;
}

/** The host of a URL as an address literal (brackets of IPv6 removed), or undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}

/**
 * Parses and checks a URL's form: absolute `https:` (or `http:` when `policy.allowHttp`), no
 * credentials.
 * @throws OutboundRefusedError (`url` or `http`) saying what is wrong.
 */
export function parseOutboundUrl(raw: string, policy: OutboundPolicy): URL {
  const url = URL.parse(raw);
  if (!url) throw new OutboundRefusedError('url', 'must be an absolute URL');
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundRefusedError('url', 'must use https');
  if (url.protocol === 'http:' && !policy.allowHttp) throw new OutboundRefusedError('http', 'must use https (http is off: WEBHOOK_ALLOW_HTTP)');
  if (url.username || url.password) throw new OutboundRefusedError('url', 'must not carry credentials');
  return url;
}

/**
 * Refuses a literal address the policy does not allow: a connection to one makes no lookup,
 * so the guarded lookup never sees it.
 * @throws OutboundRefusedError (`address` or `http`).
 */
export function assertLiteralAllowed(url: URL, policy: OutboundPolicy): void {
  const literal = literalAddress(url.hostname);
  const refusal = literal === undefined ? undefined : refusalOf(literal, url.protocol as 'http:' | 'https:', policy);
  if (refusal) throw refusal;
}

/**
 * Checks a URL and every address its host resolves to now. A host name that does not resolve
 * (or not within 2 s) is accepted when `unresolved` is `accept` (it may be published later;
 * each connection checks again) and refused as `address` otherwise.
 * @throws OutboundRefusedError saying what is refused.
 */
export async function assertOutboundUrlAllowed(raw: string, policy: OutboundPolicy, unresolved: 'accept' | 'refuse' = 'accept'): Promise<URL> {
  const url = parseOutboundUrl(raw, policy);
  const protocol = url.protocol as 'http:' | 'https:';
  const literal = literalAddress(url.hostname);
  let addresses: string[];
  if (literal !== undefined) addresses = [literal];
  else if (!mayResolve(url.hostname, policy)) addresses = [];
  else {
    // A slow resolver must not hold an admin request: past the timeout the name counts as unresolved.
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('DNS timeout')), CONFIGURE_DNS_TIMEOUT_MS).unref());
    try {
      addresses = (await Promise.race([dns.lookup(url.hostname, { all: true, verbatim: true }), timeout])).map((a) => a.address);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0 && unresolved === 'refuse') throw new OutboundRefusedError('address', `${url.hostname} does not resolve`);
  }
  for (const address of addresses) {
    const refusal = refusalOf(address, protocol, policy);
    if (refusal) throw new OutboundRefusedError(refusal.kind, `${url.hostname}: ${refusal.message}`);
  }
  return url;
}

/**
 * False when a name must not even be looked up: with `policy.loopbackOnly` only `localhost` and
 * its subdomains may name a loopback address (RFC 6761 §6.3), and a DNS query for any other name
 * would itself leave the machine.
 */
function mayResolve(hostname: string, policy: OutboundPolicy): boolean {
  if (!policy.loopbackOnly) return true;
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect` that resolves as usual and then refuses (with
 * {@link OutboundRefusedError}) when any address is not allowed for `protocol`: the
 * connection-time check, made on the very addresses the socket connects to.
 */
export function guardedLookup(protocol: 'http:' | 'https:', policy: OutboundPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    if (!mayResolve(hostname, policy)) {
      return callback(new OutboundRefusedError('address', `${hostname} is not looked up outside loopback (WEBHOOK_LOOPBACK_ONLY)`), []);
    }
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const { address } of addresses) {
        const refusal = refusalOf(address, protocol, policy);
        if (refusal) return callback(new OutboundRefusedError(refusal.kind, `${hostname}: ${refusal.message}`), []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}
