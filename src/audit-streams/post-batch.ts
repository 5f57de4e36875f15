import { guardedFetch } from '../outbound/guarded-fetch.ts';
import { OutboundRefusedError } from '../outbound/outbound-guard.ts';
import { StreamSendError, type SendOptions } from './send-batch.ts';

/** The most of an answer kept for `last_error`. */
const MAX_ERROR_TEXT = 300;

/** The message of an error and its causes, e.g. `fetch failed: connect ECONNREFUSED 127.0.0.1:9`. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  for (let e = error as { message?: string; cause?: unknown } | undefined; e && parts.length < 4; e = e.cause as typeof e) {
    if (e.message && !parts.includes(e.message)) parts.push(e.message);
  }
  return parts.join(': ') || String(error);
}

/** An answer's status and text, as {@link postBatch} read it. */
export interface BatchAnswer {
  readonly status: number;
  readonly text: string;
}

/**
 * POSTs one batch body through the outbound guard (docs/security.md, "Outbound connections":
 * the address checked at connect time, no redirect followed), within `options.timeoutMs`.
 * @throws StreamSendError saying why no answer came (a refused address, a timeout, a network error).
 */
export async function postBatch(url: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<BatchAnswer> {
  try {
    const response = await guardedFetch(options.policy)(url, {
      method: 'POST',
      headers: { 'user-agent': 'wum-audit-streams/1', ...headers },
      body,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    return { status: response.status, text: await response.text() };
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') throw new StreamSendError(`no answer within ${options.timeoutMs} ms`);
    if (error instanceof OutboundRefusedError) throw new StreamSendError(`the address is not allowed: ${error.message}`);
    throw new StreamSendError(describeError(error));
  }
}

/** `status` and the start of the answer's text, for `last_error`. */
export function answerError(answer: BatchAnswer): StreamSendError {
  const text = answer.text.replace(/\s+/g, ' ').trim().slice(0, MAX_ERROR_TEXT);
  return new StreamSendError(`HTTP ${answer.status}${text ? `: ${text}` : ''}`);
}
