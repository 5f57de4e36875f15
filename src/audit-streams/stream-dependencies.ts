import type { AuditStreamDependencies } from '../core/audit-streams/audit-streams-service.ts';
import type { OutboundPolicy } from '../outbound/outbound-guard.ts';
import { streamDestinationCheck } from './destination-check.ts';
import { availableFormats } from './formatters.ts';
import { createStreamTestSend } from './stream-worker.ts';

/**
 * What the audit stream routes need of this room (docs/api.md, "Audit streams"): the outbound
 * guard over destinations, the formats this server writes, and the test send (under `policy`,
 * within `timeoutMs`).
 */
export function streamDependencies(policy: OutboundPolicy, timeoutMs: number): AuditStreamDependencies {
  return { checkDestination: streamDestinationCheck(policy), formats: availableFormats, sendTest: createStreamTestSend({ policy, timeoutMs }) };
}
