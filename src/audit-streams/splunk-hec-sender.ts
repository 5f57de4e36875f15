import { hostname } from 'node:os';
import type { SplunkHecDestination } from '../core/audit-streams/destination.ts';
import { answerError, postBatch } from './post-batch.ts';
import { StreamSendError, type SendBatch } from './send-batch.ts';

/** The `source` and `sourcetype` of every event wum sends to Splunk. */
export const HEC_SOURCE = 'wum';
export const HEC_SOURCETYPE = 'wum:audit';

/** Where the events go, under the collector's base URL (Splunk HEC, "services/collector/event"). */
export function hecEventUrl(base: string): string {
  return `${base.replace(/\/+$/, '')}/services/collector/event`;
}

/**
 * Sends a batch to Splunk's HTTP Event Collector (docs/api.md, "Audit streams"; Splunk, "Format
 * events for HTTP Event Collector"): one POST to `<url>/services/collector/event` with
 * `Authorization: Splunk <token>`, the body the batch's events one after another, each
 * `{"time", "host", "source": "wum", "sourcetype": "wum:audit", "event": <row>}`. Only a 200
 * whose answer is `{"code": 0}` accepts the batch.
 * @throws StreamSendError for any other answer, or none.
 */
export const sendSplunkHecBatch: SendBatch<SplunkHecDestination> = async (destination, batch, options) => {
  const host = hostname();
  const body = batch.lines
    // The row's own time (epoch seconds, ms precision), so Splunk indexes the row when it happened.
    .map((line, i) => `{"time":${(batch.occurredAt[i]!.getTime() / 1000).toFixed(3)},"host":${JSON.stringify(host)},"source":"${HEC_SOURCE}","sourcetype":"${HEC_SOURCETYPE}","event":${line}}`)
    .join('\n');
  const answer = await postBatch(hecEventUrl(destination.url), { authorization: `Splunk ${destination.token}`, 'content-type': 'application/json' }, body, options);
  if (answer.status !== 200) throw answerError(answer);
  let code: unknown;
  try {
    code = (JSON.parse(answer.text) as { code?: unknown }).code;
  } catch {
    throw new StreamSendError(`HTTP 200 without a HEC answer: ${answer.text.slice(0, 200)}`);
  }
  if (code !== 0) throw answerError(answer);
};
