import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent, request as httpRequest } from 'node:http';
import type { LookupFunction } from 'node:net';

/*
 * HTTP for the conformance runner. A workspace is addressed by its host name
 * (`acme.localhost:3000`), and `*.localhost` names do not resolve everywhere, so the agent
 * resolves them to the loopback address itself; any other name goes to the system resolver.
 */

/** Resolves `*.localhost` to 127.0.0.1 (RFC 6761 §6.3), anything else through DNS. */
const lookup: LookupFunction = (hostname, options, callback) => {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: LookupAddress[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
    return;
  }
  dnsLookup(hostname, options, callback as never);
};

/** An HTTP agent whose look-ups resolve `*.localhost` to the loopback address. */
export const loopbackAgent = new Agent({ keepAlive: true, lookup });

/** A response as the suites read it. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  /** Milliseconds from sending to the end of the body. */
  readonly timeMs: number;
}

/** Sends one request (http only: the runner talks to servers on this machine). */
export function send(method: string, url: string, headers: Record<string, string>, body?: string): Promise<HttpResponse> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, agent: loopbackAgent, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), timeMs: performance.now() - started }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${url}`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Sends JSON and parses the JSON answer. */
export async function sendJson(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await send(
    method,
    url,
    { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body === undefined ? undefined : JSON.stringify(body),
  );
  let json: unknown;
  try {
    json = response.body ? JSON.parse(response.body) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, json };
}
