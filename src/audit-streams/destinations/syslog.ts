import { hostname } from 'node:os';
import tls from 'node:tls';
import type { SyslogDestination } from '../../core/audit-streams/destination.ts';
import { addressRefusal, guardedLookup, literalAddress, OutboundRefusedError } from '../../outbound/outbound-guard.ts';
import { StreamSendError, type SendBatch, type SendOptions } from '../send-batch.ts';

/*
 * The syslog destination (docs/api.md, "Syslog messages"): RFC 5424 messages over
 * TLS, framed by octet counting as RFC 5425 §4.3 says.
 */

/**
 * PRI of every message: facility 13 "log audit" × 8 + severity 6 "informational" (RFC 5424
 * §6.2.1, table 1 and 2): an audit row records a change made, not a fault.
 */
const PRI = 13 * 8 + 6;

/** APP-NAME and MSGID (RFC 5424 §6.2.5, §6.2.7); PROCID and STRUCTURED-DATA are the NILVALUE `-`. */
const APP_NAME = 'wum';
const MSG_ID = 'AUDIT';

/**
 * HOSTNAME (RFC 5424 §6.2.4): the machine's name, or `-` when it holds anything but 1 to 255
 * printable US-ASCII characters.
 */
function hostnameField(): string {
  const name = hostname();
  return /^[\x21-\x7e]{1,255}$/.test(name) ? name : '-';
}

/**
 * One RFC 5424 message in its RFC 5425 frame: `<len> <PRI>1 TIMESTAMP HOSTNAME wum - AUDIT - <line>`.
 * MSG is the line as UTF-8 without a BOM (RFC 5424 §6.4 allows MSG-ANY): a BOM would sit in
 * front of the JSON of every receiver that does not strip it. MSG-LEN counts octets, not characters.
 */
export function syslogFrame(line: string, at: Date, host: string = hostnameField()): Buffer {
  const message = Buffer.from(`<${PRI}>1 ${at.toISOString()} ${host} ${APP_NAME} - ${MSG_ID} - ${line}`, 'utf8');
  return Buffer.concat([Buffer.from(`${message.length} `, 'ascii'), message]);
}

/** The guard's check of a literal address, made before connecting: a literal is never looked up. */
function assertHostAllowed(host: string, options: SendOptions): void {
  const literal = literalAddress(host);
  if (literal === undefined) return;
  const refusal = addressRefusal(literal, 'https:', options.policy);
  if (refusal) throw new OutboundRefusedError('address', refusal);
}

/** TLS verification errors (OpenSSL's codes, as Node names them): the server's certificate is not trusted. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function failure(error: unknown, destination: SyslogDestination): StreamSendError {
  const code = (error as { code?: unknown }).code;
  const text = error instanceof Error ? error.message : String(error);
  let reason: string;
  if (error instanceof OutboundRefusedError) reason = `refused by the outbound guard: ${text}`;
  else if (typeof code === 'string' && UNTRUSTED.has(code)) reason = `the server's TLS certificate is not trusted (${code}: ${text})`;
  else reason = typeof code === 'string' ? `${code}: ${text}` : text;
  return new StreamSendError(`syslog over TLS to ${destination.host}:${destination.port} failed: ${reason}`, { cause: error });
}

/**
 * Sends a batch to a syslog receiver over TLS: one RFC 5424 message per line (facility log
 * audit, severity informational, APP-NAME `wum`, MSGID `AUDIT`, the line as MSG), each framed
 * as RFC 5425 §4.3 says, all on one connection, in order. The server's certificate is checked
 * against `caCertificate` when given, else the system's CAs, and must name `host`. The host
 * passes the outbound guard (docs/security.md, "Outbound connections"): a literal address is
 * checked before connecting, a name is resolved through the guarded lookup.
 *
 * Resolves once every byte is written and the connection closed in order (TLS close_notify
 * sent); RFC 5425 has no application acknowledgement, so "sent" is all a sender can know: a
 * receiver that fails after reading is not noticed, and a batch that fails midway is sent
 * again whole (at least once; receivers de-duplicate by audit id).
 * @throws StreamSendError: the guard's refusal, a certificate not trusted, the network error,
 *   or the timeout (`options.timeoutMs` for the whole send).
 */
export const sendSyslogBatch: SendBatch<SyslogDestination> = (destination, batch, options) =>
  new Promise<void>((resolve, reject) => {
    try {
      assertHostAllowed(destination.host, options);
    } catch (error) {
      return reject(failure(error, destination));
    }
    const host = hostnameField();
    const frames = Buffer.concat(batch.lines.map((line, i) => syslogFrame(line, batch.occurredAt[i]!, host)));
    const literal = literalAddress(destination.host) !== undefined;
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error === undefined) resolve();
      else {
        socket.destroy();
        reject(failure(error, destination));
      }
    };
    const socket = tls.connect({
      host: destination.host,
      port: destination.port,
      // SNI takes names only (RFC 6066 §3); an address is checked against the certificate's IP names.
      ...(literal ? {} : { servername: destination.host }),
      ...(destination.caCertificate === undefined ? {} : { ca: [destination.caCertificate] }),
      minVersion: 'TLSv1.2',
      lookup: guardedLookup('https:', options.policy),
    });
    const timer = setTimeout(() => settle(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    socket.on('error', (error) => settle(error));
    socket.once('secureConnect', () => {
      socket.write(frames);
      // end's callback runs at 'finish': every byte handed to the kernel after the ones before it.
      socket.end(() => settle());
    });
  });
