import { and, count, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import { pageOffset } from '../core/pagination.ts';
import type { WebhookRepository } from '../core/webhooks/webhook-repository.ts';
import { encryptSecret, type KeyRing } from '../core/secrets/secret-box.ts';
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery, WebhookEndpoint } from '../core/webhooks/webhook-endpoint.ts';
import type { Database } from './database.ts';
import { isUuid } from './uuid.ts';
import { events, webhookDeliveries, webhookEndpoints } from './schema.ts';

/** The columns of an endpoint that may leave storage: never its secrets. */
const endpointColumns = {
  id: webhookEndpoints.id,
  url: webhookEndpoints.url,
  description: webhookEndpoints.description,
  eventTypes: webhookEndpoints.eventTypes,
  enabled: webhookEndpoints.enabled,
  disabledReason: webhookEndpoints.disabledReason,
  previousSecretExpiresAt: webhookEndpoints.previousSecretExpiresAt,
  createdAt: webhookEndpoints.createdAt,
  updatedAt: webhookEndpoints.updatedAt,
};

const deliveryColumns = {
  id: webhookDeliveries.id,
  endpointId: webhookDeliveries.endpointId,
  eventId: events.id,
  eventType: events.type,
  eventSequence: webhookDeliveries.eventSequence,
  status: webhookDeliveries.status,
  attempts: webhookDeliveries.attempts,
  nextAttemptAt: webhookDeliveries.nextAttemptAt,
  lastAttemptAt: webhookDeliveries.lastAttemptAt,
  lastResponseStatus: webhookDeliveries.lastResponseStatus,
  attemptLog: webhookDeliveries.attemptLog,
  createdAt: webhookDeliveries.createdAt,
  deliveredAt: webhookDeliveries.deliveredAt,
};


function toEndpoint(row: Omit<WebhookEndpoint, 'eventTypes'> & { eventTypes: string[] | null }): WebhookEndpoint {
  // A rotated-out secret past its time no longer signs: do not show its expiry either.
  const expires = row.previousSecretExpiresAt && row.previousSecretExpiresAt > new Date() ? row.previousSecretExpiresAt : null;
  return { ...row, previousSecretExpiresAt: expires };
}

/** A delivery row as selected with {@link deliveryColumns}. */
interface DeliveryRow extends Omit<WebhookDelivery, 'status' | 'attemptLog' | 'nextAttemptAt'> {
  status: string;
  nextAttemptAt: Date;
  attemptLog: unknown;
}

function toDelivery(row: DeliveryRow): WebhookDelivery {
  const status = row.status as DeliveryStatus;
  return {
    ...row,
    eventSequence: Number(row.eventSequence),
    status,
    nextAttemptAt: status === 'pending' ? row.nextAttemptAt : null,
    attemptLog: (typeof row.attemptLog === 'string' ? JSON.parse(row.attemptLog) : row.attemptLog) as DeliveryAttempt[],
  };
}

/**
 * The webhook endpoints and deliveries repository over Drizzle; every query names the workspace.
 * Signing secrets are stored encrypted with `keyRing`.
 */
export function createWebhookRepository(db: Database, keyRing: KeyRing): WebhookRepository {
  const endpointWhere = (workspaceId: number, id: string) =>
    and(eq(webhookEndpoints.workspaceId, workspaceId), eq(webhookEndpoints.id, id));
  const deliveriesOf = (workspaceId: number, endpointId: string) =>
    and(eq(webhookDeliveries.workspaceId, workspaceId), eq(webhookDeliveries.endpointId, endpointId));
  const joinEvent = and(eq(events.workspaceId, webhookDeliveries.workspaceId), eq(events.sequence, webhookDeliveries.eventSequence));

  return {
    async insert(workspaceId, endpoint) {
      const [row] = await db
        .insert(webhookEndpoints)
        .values({ workspaceId, url: endpoint.url, description: endpoint.description, eventTypes: endpoint.eventTypes ? [...endpoint.eventTypes] : null, secret: encryptSecret(keyRing, endpoint.secret) })
        .returning(endpointColumns);
      return toEndpoint(row!);
    },

    async findAll(workspaceId) {
      const rows = await db
        .select(endpointColumns)
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.workspaceId, workspaceId))
        .orderBy(webhookEndpoints.createdAt, webhookEndpoints.id);
      return rows.map(toEndpoint);
    },

    async find(workspaceId, id, options = {}) {
      // Not a UUID cannot name an endpoint; answering "not found" beats a database type error.
      if (!isUuid(id)) return undefined;
      const query = db.select(endpointColumns).from(webhookEndpoints).where(endpointWhere(workspaceId, id));
      const [row] = options.lock ? await query.for('update') : await query;
      return row ? toEndpoint(row) : undefined;
    },

    async update(workspaceId, id, changes) {
      const [row] = await db
        .update(webhookEndpoints)
        .set({
          ...(changes.url === undefined ? {} : { url: changes.url }),
          ...(changes.description === undefined ? {} : { description: changes.description }),
          ...(changes.eventTypes === undefined ? {} : { eventTypes: changes.eventTypes ? [...changes.eventTypes] : null }),
          ...(changes.enabled === undefined ? {} : { enabled: changes.enabled, ...(changes.enabled ? { disabledReason: null } : { disabledReason: 'disabled by the operator' }) }),
          updatedAt: sql`now()`,
        })
        .where(endpointWhere(workspaceId, id))
        .returning(endpointColumns);
      return toEndpoint(row!);
    },

    async rotateSecret(workspaceId, id, secret, previousExpiresAt) {
      const [row] = await db
        .update(webhookEndpoints)
        .set({ previousSecret: webhookEndpoints.secret, previousSecretExpiresAt: previousExpiresAt, secret: encryptSecret(keyRing, secret), updatedAt: sql`now()` })
        .where(endpointWhere(workspaceId, id))
        .returning(endpointColumns);
      return toEndpoint(row!);
    },

    async disableFailing(workspaceId, id, failingSince) {
      const [row] = await db
        .update(webhookEndpoints)
        .set({ enabled: false, disabledReason: 'failing', updatedAt: sql`now()` })
        .where(
          and(
            endpointWhere(workspaceId, id),
            eq(webhookEndpoints.enabled, true),
            or(isNull(webhookEndpoints.lastSuccessAt), lt(webhookEndpoints.lastSuccessAt, failingSince)),
          ),
        )
        .returning(endpointColumns);
      return row ? toEndpoint(row) : undefined;
    },

    async delete(workspaceId, id) {
      await db.delete(webhookEndpoints).where(endpointWhere(workspaceId, id));
    },

    async findDeliveries(workspaceId, endpointId, page) {
      const where = deliveriesOf(workspaceId, endpointId);
      const [total] = await db.select({ n: count() }).from(webhookDeliveries).where(where);
      const rows = await db
        .select(deliveryColumns)
        .from(webhookDeliveries)
        .innerJoin(events, joinEvent)
        .where(where)
        .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.eventSequence))
        .limit(page.pageSize)
        .offset(pageOffset(page));
      return { rows: rows.map(toDelivery), total: total?.n ?? 0 };
    },

    async redeliver(workspaceId, endpointId, deliveryId) {
      if (!isUuid(deliveryId)) return undefined;
      const [updated] = await db
        .update(webhookDeliveries)
        .set({ status: 'pending', attempts: 0, nextAttemptAt: sql`now()`, firstFailedAt: null, deliveredAt: null })
        .where(and(deliveriesOf(workspaceId, endpointId), eq(webhookDeliveries.id, deliveryId)))
        .returning({ id: webhookDeliveries.id });
      if (!updated) return undefined;
      const [row] = await db
        .select(deliveryColumns)
        .from(webhookDeliveries)
        .innerJoin(events, joinEvent)
        .where(and(deliveriesOf(workspaceId, endpointId), eq(webhookDeliveries.id, deliveryId)));
      return toDelivery(row!);
    },
  };
}
