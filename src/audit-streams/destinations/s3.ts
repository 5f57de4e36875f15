import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { S3Destination } from '../../core/audit-streams/destination.ts';
import { assertOutboundUrlAllowed, guardedLookup, OutboundRefusedError, type OutboundPolicy } from '../../outbound/outbound-guard.ts';
import { StreamSendError, type SendBatch, type SendOptions, type StreamBatch } from '../send-batch.ts';

const gzipAsync = promisify(gzip);

/** Digits of a padded audit id: a PostgreSQL bigint has at most 19, so 20 never overflows. */
const ID_DIGITS = 20;

/** `2026-11-26T20:44:20.123Z` → `20261126T204420123Z`: sortable as text, no `:` to escape in a key. */
function compactInstant(at: Date): string {
  return at.toISOString().replace(/[-:.]/g, '');
}

/**
 * The object key of a batch: `<prefix><yyyy>/<mm>/<dd>/<first time>_<first id>-<last id>.jsonl.gz`
 * (docs/api.md, "S3 objects"), with the UTC day of the batch's first row, its
 * time compact to the millisecond, and both audit ids zero-padded to 20 digits, so that keys
 * listed in lexical order come in audit order, and the same batch sent again lands on the same key.
 */
export function s3ObjectKey(prefix: string | undefined, batch: Pick<StreamBatch, 'occurredAt' | 'firstAuditId' | 'lastAuditId'>): string {
  const first = batch.occurredAt[0]!;
  const iso = first.toISOString();
  const day = `${iso.slice(0, 4)}/${iso.slice(5, 7)}/${iso.slice(8, 10)}`;
  const ids = `${String(batch.firstAuditId).padStart(ID_DIGITS, '0')}-${String(batch.lastAuditId).padStart(ID_DIGITS, '0')}`;
  return `${prefix ?? ''}${day}/${compactInstant(first)}_${ids}.jsonl.gz`;
}

/** Most S3 clients kept per outbound policy (one per destination and key pair in use); the least recently used goes first. */
const MAX_CLIENTS = 64;
/** How long an idle connection to S3 stays open for the next batch, in ms: well inside the idle timeouts S3 servers keep. */
const IDLE_CONNECTION_MS = 4_000;

/** The clients in use, per outbound policy, keyed by destination and key pair ({@link clientKey}). */
const clients = new WeakMap<OutboundPolicy, Map<string, S3Client>>();

/** A destination's endpoint, region and key pair (the secret as a digest: the key is held in memory only). */
function clientKey(destination: S3Destination): string {
  const secret = createHash('sha256').update(destination.secretAccessKey).digest('base64');
  return JSON.stringify([destination.endpoint ?? null, destination.region, destination.accessKeyId, secret]);
}

/**
 * The S3 client of a destination, made once and kept, so that its batches reuse one kept-alive
 * connection (a TLS handshake and the client's own set-up per batch cost more than a small
 * batch's PUT). Every connection passes the outbound guard: the endpoint is checked before each
 * send (a literal address is never looked up), and each host name is resolved through the
 * guarded lookup when a connection opens. One attempt only: the stream worker retries the whole
 * batch with its own backoff, so a failure reaches `last_error` at once. No timeouts of its own:
 * the send's abort signal bounds connecting and answering alike, and says so in one message.
 */
async function clientFor(destination: S3Destination, options: SendOptions): Promise<S3Client> {
  const policy: OutboundPolicy = options.policy;
  if (destination.endpoint !== undefined) await assertOutboundUrlAllowed(destination.endpoint, policy);
  let kept = clients.get(policy);
  if (!kept) clients.set(policy, (kept = new Map<string, S3Client>()));
  const key = clientKey(destination);
  let client = kept.get(key);
  if (client) {
    // Most recently used last: a Map iterates in insertion order.
    kept.delete(key);
  } else {
    const agent = { keepAlive: true, timeout: IDLE_CONNECTION_MS };
    client = new S3Client({
      region: destination.region,
      ...(destination.endpoint === undefined ? {} : { endpoint: destination.endpoint, forcePathStyle: true }),
      credentials: { accessKeyId: destination.accessKeyId, secretAccessKey: destination.secretAccessKey },
      maxAttempts: 1,
      requestHandler: new NodeHttpHandler({
        httpAgent: new http.Agent({ ...agent, lookup: guardedLookup('http:', policy) }),
        httpsAgent: new https.Agent({ ...agent, lookup: guardedLookup('https:', policy) }),
      }),
    });
  }
  kept.set(key, client);
  if (kept.size > MAX_CLIENTS) {
    // A batch still sending on it fails and is sent again by the worker's retry.
    const [oldestKey, oldest] = kept.entries().next().value!;
    kept.delete(oldestKey);
    oldest.destroy();
  }
  return client;
}

/** What went wrong, in words for the stream's `last_error`, with the secret key blanked should any layer echo it. */
function failure(error: unknown, destination: S3Destination, timedOut: boolean, options: SendOptions): StreamSendError {
  let reason: string;
  if (timedOut) reason = `timed out after ${options.timeoutMs} ms`;
  else if (error instanceof OutboundRefusedError) reason = `refused by the outbound guard: ${error.message}`;
  else if (error instanceof S3ServiceException) {
    const status = error.$metadata.httpStatusCode;
    reason = `${error.name}: ${error.message}${status === undefined ? '' : ` (HTTP ${status})`}`;
  } else {
    const cause = (error as { cause?: unknown }).cause;
    // The SDK wraps the lookup's refusal; the guard's words say more than the wrapper's.
    if (cause instanceof OutboundRefusedError) reason = `refused by the outbound guard: ${cause.message}`;
    else {
      const code = (error as { code?: unknown }).code;
      reason = `${typeof code === 'string' ? `${code}: ` : ''}${error instanceof Error ? error.message : String(error)}`;
    }
  }
  const message = `S3 PutObject to bucket "${destination.bucket}" failed: ${reason}`.split(destination.secretAccessKey).join('***');
  return new StreamSendError(message, { cause: error });
}

/**
 * Sends a batch as one gzipped JSON Lines object (`application/x-ndjson`, `Content-Encoding:
 * gzip`) to an S3 or S3-compatible bucket (path-style when `endpoint` is given), under the key
 * {@link s3ObjectKey} makes: idempotent, a batch sent again overwrites its own object. Resolves
 * once S3 has answered the PUT with success, within `options.timeoutMs`.
 * Follows docs/api.md, "S3 objects", and docs/security.md, "Outbound connections".
 * @throws StreamSendError with the S3 error code and message (`NoSuchBucket`,
 *   `InvalidAccessKeyId`, `SignatureDoesNotMatch`, …), the guard's refusal, the network error,
 *   or the timeout; never the secret key.
 */
export const sendS3Batch: SendBatch<S3Destination> = async (destination, batch, options) => {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs);
  try {
    const client = await clientFor(destination, options);
    const body = await gzipAsync(Buffer.from(batch.lines.map((line) => `${line}\n`).join(''), 'utf8'));
    await client.send(
      new PutObjectCommand({
        Bucket: destination.bucket,
        Key: s3ObjectKey(destination.prefix, batch),
        Body: body,
        ContentType: 'application/x-ndjson',
        ContentEncoding: 'gzip',
      }),
      { abortSignal: abort.signal },
    );
  } catch (error) {
    throw failure(error, destination, abort.signal.aborted, options);
  } finally {
    clearTimeout(timer);
  }
};
