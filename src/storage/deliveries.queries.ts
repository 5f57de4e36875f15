import { sql } from 'drizzle-orm';
import type { DeliveryAttempt } from '../core/webhooks/webhook-endpoint.ts';
import type { Database } from './database.ts';
import { toWorkspaceEvent } from './events.queries.ts';
import type { WorkspaceEvent } from '../core/events/event.ts';

/*
 * The delivery worker's statements (docs/contract.md Part B, Events and webhooks). A claim is one
 * statement: it locks due deliveries with `FOR UPDATE SKIP LOCKED` (so concurrent workers of
 * several processes never take the same row) and pushes their `next_attempt_at` past the
 * attempt's timeout — a lease: if this process dies mid-attempt, the row falls due again and
 * another process (or this one, restarted) sends it. An outcome is recorded only if the row is
 * still as claimed (same attempt count), so a late answer cannot undo a newer attempt.
 */

/** A delivery claimed for one attempt, with what the attempt needs. */
export interface ClaimedDelivery {
  readonly workspaceId: number;
  readonly id: string;
  readonly endpointId: string;
  readonly url: string;
  /** The secrets that sign it: the current one, and the previous one while it is still valid. */
  readonly secrets: readonly string[];
  /** Attempts made before this one (the retry schedule's index). */
  readonly attempts: number;
  readonly event: WorkspaceEvent;
}

/** Options of {@link claimDueDeliveries}. */
export interface ClaimOptions {
  /** Deliveries this process is sending now, by endpoint id: they count against `perEndpoint`. */
  readonly inFlight: ReadonlyMap<string, number>;
  /** Most endpoints to claim for. */
  readonly maxEndpoints: number;
  /** Most deliveries in flight per endpoint (its concurrency in this process). */
  readonly perEndpoint: number;
  /** How long the claim holds, in ms: longer than an attempt may take. */
  readonly leaseMs: number;
}

interface ClaimRow {
  workspace_id: number | string;
  id: string;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  attempts: number;
  event_id: string;
  type: string;
  sequence: number | string;
  event_created_at: string | Date;
  data: unknown;
  subdomain: string;
}

function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

/**
 * Claims due pending deliveries of enabled endpoints, oldest due first, each leased for
 * `leaseMs`: for each of up to `maxEndpoints` endpoints, as many as `perEndpoint` less those
 * of it already in flight here.
 */
export async function claimDueDeliveries(db: Database, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  const ids = `{${[...options.inFlight.keys()].join(',')}}`;
  const counts = `{${[...options.inFlight.values()].join(',')}}`;
  const result = await db.execute(sql`with used as (
      select * from unnest(${ids}::uuid[], ${counts}::int[]) as u(endpoint_id, n)
    ),
    candidates as (
      select ep.workspace_id, ep.id, ${options.perEndpoint}::int - coalesce(u.n, 0) as free
      from webhook_endpoints ep left join used u on u.endpoint_id = ep.id
      where ep.enabled and coalesce(u.n, 0) < ${options.perEndpoint}::int
        and exists (select 1 from webhook_deliveries d
          where d.endpoint_id = ep.id and d.status = 'pending' and d.next_attempt_at <= now() and d.workspace_id = ep.workspace_id)
      limit ${options.maxEndpoints}::int
    ),
    due as (
      select d.workspace_id, d.id from candidates c cross join lateral (
        select d.workspace_id, d.id from webhook_deliveries d
        where d.endpoint_id = c.id and d.workspace_id = c.workspace_id and d.status = 'pending' and d.next_attempt_at <= now()
        order by d.next_attempt_at limit c.free
        for update skip locked
      ) d
    ),
    claimed as (
      update webhook_deliveries d set next_attempt_at = now() + make_interval(secs => ${options.leaseMs / 1000}::float8)
      from due where d.workspace_id = due.workspace_id and d.id = due.id
      returning d.workspace_id, d.id, d.endpoint_id, d.event_sequence, d.attempts
    )
    select c.workspace_id, c.id, c.endpoint_id, c.attempts, ep.url, ep.secret,
      case when ep.previous_secret_expires_at > now() then ep.previous_secret end as previous_secret,
      e.id as event_id, e.type, e.sequence, e.created_at as event_created_at, e.data, w.subdomain
    from claimed c
    join webhook_endpoints ep on ep.workspace_id = c.workspace_id and ep.id = c.endpoint_id
    join events e on e.workspace_id = c.workspace_id and e.sequence = c.event_sequence
    join workspaces w on w.id = c.workspace_id`);
  return rowsOf<ClaimRow>(result).map((row) => ({
    workspaceId: Number(row.workspace_id),
    id: row.id,
    endpointId: row.endpoint_id,
    url: row.url,
    secrets: row.previous_secret ? [row.secret, row.previous_secret] : [row.secret],
    attempts: Number(row.attempts),
    event: toWorkspaceEvent({
      id: row.event_id,
      type: row.type,
      sequence: row.sequence,
      createdAt: row.event_created_at,
      subdomain: row.subdomain,
      data: row.data,
    }),
  }));
}

/** What one attempt came to. */
export type AttemptOutcome =
  | { readonly kind: 'succeeded'; readonly attempt: DeliveryAttempt }
  /** Failed; retried after `retryInMs`. */
  | { readonly kind: 'retry'; readonly attempt: DeliveryAttempt; readonly retryInMs: number }
  /** Failed, and the retry schedule is used up. */
  | { readonly kind: 'failed'; readonly attempt: DeliveryAttempt };

/**
 * Records the outcome of an attempt of `delivery`: its log entry, status and next attempt; a
 * success also marks the endpoint's last success. Returns false when the row was no longer as
 * claimed (another process's attempt, or a redelivery, came first); for a final failure, the
 * start of the delivery's failing streak (for the disabling rule) when recorded.
 */
export async function recordAttempt(
  db: Database,
  delivery: ClaimedDelivery,
  outcome: AttemptOutcome,
): Promise<{ recorded: false } | { recorded: true; failingSince: Date }> {
  const log = JSON.stringify([outcome.attempt]);
  const attemptedAt = outcome.attempt.attempted_at;
  const where = sql`workspace_id = ${delivery.workspaceId} and id = ${delivery.id}::uuid and status = 'pending' and attempts = ${delivery.attempts}::int`;
  const common = sql`attempts = attempts + 1, last_attempt_at = ${attemptedAt}::timestamptz,
    last_response_status = ${outcome.attempt.response_status}::int, attempt_log = attempt_log || ${log}::jsonb`;
  let statement;
  if (outcome.kind === 'succeeded') {
    statement = sql`with done as (
        update webhook_deliveries set ${common}, status = 'succeeded', delivered_at = now(), first_failed_at = null
        where ${where} returning endpoint_id, now() as failing_since
      ),
      marked as (
        -- At most once a second per endpoint: concurrent successes would otherwise queue on its row lock.
        update webhook_endpoints ep set last_success_at = now() from done
        where ep.workspace_id = ${delivery.workspaceId} and ep.id = done.endpoint_id
          and (ep.last_success_at is null or ep.last_success_at < now() - interval '1 second')
      )
      select failing_since from done`;
  } else {
    const next = outcome.kind === 'retry'
      ? sql`next_attempt_at = now() + make_interval(secs => ${outcome.retryInMs / 1000}::float8)`
      : sql`status = 'failed'`;
    statement = sql`update webhook_deliveries set ${common}, ${next},
        first_failed_at = coalesce(first_failed_at, ${attemptedAt}::timestamptz)
      where ${where} returning first_failed_at as failing_since`;
  }
  const [row] = rowsOf<{ failing_since: string | Date }>(await db.execute(statement));
  return row ? { recorded: true, failingSince: new Date(row.failing_since) } : { recorded: false };
}

/** Deliveries waiting to be sent (pending, enabled endpoint or not): the `/metrics` gauge. */
export async function countPendingDeliveries(db: Database): Promise<number> {
  const [row] = rowsOf<{ n: number | string }>(await db.execute(sql`select count(*) as n from webhook_deliveries where status = 'pending'`));
  return Number(row?.n ?? 0);
}
