import type { Config } from '../config/load-config.ts';
import type { Store } from '../core/ports.ts';
import type { AppDependencies } from '../http/app.ts';
import type { OpenDatabase } from '../storage/database.ts';
import { createIdempotencyStore } from '../storage/idempotency.queries.ts';
import { webhookUrlCheck } from '../webhooks/url-guard.ts';
import { streamDependencies } from '../audit-streams/stream-dependencies.ts';

/** The part of {@link AppDependencies} that comes from the database and the configuration. */
export type StorageDependencies = Pick<AppDependencies, 'store' | 'idempotency' | 'ping' | 'beginTransaction' | 'checkWebhookUrl' | 'auditStreams'>;

/**
 * What `buildApp` needs from an open database, its store and the configuration: the store, the
 * idempotency store on the same database, its ping (for `/readyz`), its request transactions
 * where the backend has them (PostgreSQL), the webhook URL policy and the audit streams' checks and test send. One place, so that the
 * server and the tests build the app the same way. Source: docs/architecture.md (how a request
 * flows). Throws nothing.
 */
export function storageDependencies(config: Config, database: OpenDatabase, store: Store): StorageDependencies {
  return {
    store,
    checkWebhookUrl: webhookUrlCheck(config.webhooks),
    auditStreams: streamDependencies(config.outbound, config.webhooks.timeoutMs),
    idempotency: createIdempotencyStore(database.db),
    ping: database.ping,
    ...(database.beginRequestTransaction ? { beginTransaction: database.beginRequestTransaction } : {}),
  };
}
