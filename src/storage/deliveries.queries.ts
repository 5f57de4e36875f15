import { sql } from 'drizzle-orm';
import type { Database } from './database.ts';
import { toWorkspaceEvent } from './events.queries.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { rowsOf } from './rows.ts';
import { previousSecretWhileValid, signingSecrets } from './signing-secrets.ts';
import type { AttemptOutcome, ClaimedDelivery, ClaimOptions, DeliveryQueue, DeliverySuccess, RecordedAttempt } from '../core/webhooks/delivery-queue.ts';

/*
 * The delivery worker's statements (docs/contract.md Part B, Events and webhooks). A claim is one
 * statement: it locks due deliveries with `FOR UPDATE SKIP LOCKED` (so concurrent workers of
 * several processes never take the same row) and pushes their `next_attempt_at` past the
 * attempt's timeout — a lease: if this process dies mid-attempt, the row falls due again and
 * another process (or this one, restarted) sends it. An outcome is recorded only if the row is
 * still as claimed (same attempt count), so a late answer cannot undo a newer attempt.
 */

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
  actor: unknown;
  subdomain: string;
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
        -- One probe per endpoint of the due index, in its order. As an exists, PostgreSQL made it
        -- a semi-join that read every pending delivery per claim (4-6 ms a claim on the webhooks
        -- benchmark; docs/performance.md, "Webhooks"); without the order, a never-analyzed table
        -- read an endpoint's every delivery by another index.
        and (select 1 from webhook_deliveries d
          where d.endpoint_id = ep.id and d.status = 'pending' and d.next_attempt_at <= now() and d.workspace_id = ep.workspace_id
          order by d.next_attempt_at limit 1) is not null
      limit ${options.maxEndpoints}::int
    ),
    due as (
      select d.workspace_id, d.id, d.ctid from candidates c cross join lateral (
        select d.workspace_id, d.id, d.ctid from webhook_deliveries d
        where d.endpoint_id = c.id and d.workspace_id = c.workspace_id and d.status = 'pending' and d.next_attempt_at <= now()
        order by d.next_attempt_at limit c.free
        for update skip locked
      ) d
    ),
    claimed as (
      -- By the locked version's ctid: joined by key alone, a young table's estimate chose a hash join
      -- over a sequential scan. Should a row have changed before it was locked, its ctid names a
      -- version this statement cannot see: it is left unclaimed, to be claimed by a later pass.
      update webhook_deliveries d set next_attempt_at = now() + make_interval(secs => ${options.leaseMs / 1000}::float8)
      from due where d.ctid = due.ctid and d.workspace_id = due.workspace_id and d.id = due.id
      returning d.workspace_id, d.id, d.endpoint_id, d.event_sequence, d.attempts
    )
    select c.workspace_id, c.id, c.endpoint_id, c.attempts, ep.url, ep.secret,
      ${previousSecretWhileValid} as previous_secret,
      e.id as event_id, e.type, e.sequence, e.created_at as event_created_at, e.data, e.actor, w.subdomain
    -- Each row by its key, laterally (the limit keeps PostgreSQL from flattening the subquery back
    -- into a join): as plain joins, a claim estimated at one row let the planner read every event
    -- of the workspace per delivery (3.7 ms a claim on average on the webhooks benchmark, up to
    -- 24 ms; docs/performance.md, "Webhooks").
    from claimed c
    cross join lateral (select * from webhook_endpoints ep where ep.workspace_id = c.workspace_id and ep.id = c.endpoint_id limit 1) ep
    cross join lateral (select * from events e where e.workspace_id = c.workspace_id and e.sequence = c.event_sequence limit 1) e
    cross join lateral (select w.subdomain from workspaces w where w.id = c.workspace_id limit 1) w`);
  return rowsOf<ClaimRow>(result).map((row) => ({
    workspaceId: Number(row.workspace_id),
    id: row.id,
    endpointId: row.endpoint_id,
    url: row.url,
    secrets: signingSecrets(row.secret, row.previous_secret),
    attempts: Number(row.attempts),
    event: toWorkspaceEvent({
      id: row.event_id,
      type: row.type,
      sequence: row.sequence,
      createdAt: row.event_created_at,
      subdomain: row.subdomain,
      data: row.data,
      actor: row.actor,
    }),
  }));
}

/**
 * Records a failed attempt of `delivery`: its log entry, status and next attempt. Returns
 * false when the row was no longer as claimed (another process's attempt, or a redelivery,
 * came first); else the start of the delivery's failing streak (for the disabling rule).
 */
export async function recordAttempt(
  db: Database,
  delivery: ClaimedDelivery,
  outcome: AttemptOutcome,
): Promise<RecordedAttempt> {
  const log = JSON.stringify([outcome.attempt]);
  const attemptedAt = outcome.attempt.attempted_at;
  const next = outcome.kind === 'retry'
    ? sql`next_attempt_at = now() + make_interval(secs => ${outcome.retryInMs / 1000}::float8)`
    : sql`status = 'failed'`;
  const statement = sql`update webhook_deliveries set attempts = attempts + 1, last_attempt_at = ${attemptedAt}::timestamptz,
      last_response_status = ${outcome.attempt.response_status}::int, attempt_log = attempt_log || ${log}::jsonb, ${next},
      first_failed_at = coalesce(first_failed_at, ${attemptedAt}::timestamptz)
    where workspace_id = ${delivery.workspaceId} and id = ${delivery.id}::uuid and status = 'pending' and attempts = ${delivery.attempts}::int
    returning first_failed_at as failing_since`;
  const [row] = rowsOf<{ failing_since: string | Date }>(await db.execute(statement));
  return row ? { recorded: true, failingSince: new Date(row.failing_since) } : { recorded: false };
}

/**
 * The statement of {@link recordSuccesses}, a named statement: planned once per connection, where
 * planning it had cost about as much as running it (docs/performance.md, "Webhooks"). The batch
 * is one JSON array read by `jsonb_to_recordset`, whose row estimate is the same whatever its
 * length: as arrays read by `unnest`, each call's own plan knew the batch's length and the
 * generic plan assumed ten rows, so a batch of a few deliveries (a server without much load)
 * looked cheaper planned anew, and PostgreSQL planned the statement on every call. Each
 * delivery is locked by its key, then updated by the version locked (ctid): joined to the batch
 * by key in the update, with few pending rows in its statistics, PostgreSQL read every pending
 * delivery per batch. The batch comes sorted by key, so that two batches lock in one order. A
 * row changed after this statement's snapshot is left as it is: no longer as claimed.
 */
const recordSucceeded = new NamedStatement(
  'wum_deliveries_succeeded',
  () => sql`with batch as (
      select * from jsonb_to_recordset(${ph('batch')}::jsonb)
        as b(workspace_id int8, id uuid, attempts int4, attempted_at timestamptz, response_status int4, entry jsonb)
    ),
    found as (
      select f.ctid, b.attempted_at, b.response_status, b.entry from batch b
      cross join lateral (
        select d.ctid, d.status, d.attempts from webhook_deliveries d where d.workspace_id = b.workspace_id and d.id = b.id
        limit 1 for update
      ) f
      where f.status = 'pending' and f.attempts = b.attempts
    ),
    done as (
      update webhook_deliveries d set attempts = d.attempts + 1, last_attempt_at = b.attempted_at,
        last_response_status = b.response_status, attempt_log = d.attempt_log || jsonb_build_array(b.entry),
        status = 'succeeded', delivered_at = now(), first_failed_at = null
      from found b
      where d.ctid = b.ctid
      returning d.workspace_id, d.id, d.endpoint_id
    ),
    stale as (
      select ep.workspace_id, ep.id from webhook_endpoints ep
      where (ep.workspace_id, ep.id) in (select workspace_id, endpoint_id from done)
        and (ep.last_success_at is null or ep.last_success_at < now() - interval '1 second')
      order by ep.workspace_id, ep.id
      for update of ep
    ),
    marked as (
      update webhook_endpoints ep set last_success_at = now() from stale
      where ep.workspace_id = stale.workspace_id and ep.id = stale.id
    )
    select id from done`,
);

/**
 * Records many successful attempts in one statement, each as {@link recordAttempt} would
 * (log entry, `succeeded`, delivered now, only while the row is still as claimed), and marks
 * their endpoints' last success at most once a second; the endpoint rows are locked in key
 * order, so two processes recording batches cannot deadlock on them. Returns the ids of the
 * deliveries recorded (the others were no longer as claimed). One statement per batch instead
 * of one per delivery: docs/performance.md, "Webhooks".
 */
export async function recordSuccesses(db: Database, successes: readonly DeliverySuccess[]): Promise<Set<string>> {
  if (successes.length === 0) return new Set();
  const sorted = [...successes].sort((a, b) => a.delivery.workspaceId - b.delivery.workspaceId || (a.delivery.id < b.delivery.id ? -1 : 1));
  const batch = sorted.map((s) => ({
    workspace_id: s.delivery.workspaceId,
    id: s.delivery.id,
    attempts: s.delivery.attempts,
    attempted_at: s.attempt.attempted_at,
    response_status: s.attempt.response_status,
    entry: s.attempt,
  }));
  const rows = await recordSucceeded.run<{ id: string }>(db, { batch: JSON.stringify(batch) });
  return new Set(rows.map((row) => row.id));
}

/**
 * Makes the given deliveries due now, each only while it is pending with no attempt made
 * (as a write left it leased for its process's worker, which will not send it): one statement.
 */
export async function releaseLeases(db: Database, deliveries: readonly ClaimedDelivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  await db.execute(sql`update webhook_deliveries d set next_attempt_at = now()
    from unnest(${sql.param(deliveries.map((d) => d.workspaceId))}::int8[], ${sql.param(deliveries.map((d) => d.id))}::uuid[]) as r(workspace_id, id)
    where d.workspace_id = r.workspace_id and d.id = r.id and d.status = 'pending' and d.attempts = 0`);
}

/** Deliveries waiting to be sent (pending, enabled endpoint or not): the `/metrics` gauge. */
export async function countPendingDeliveries(db: Database): Promise<number> {
  const [row] = rowsOf<{ n: number | string }>(await db.execute(sql`select count(*) as n from webhook_deliveries where status = 'pending'`));
  return Number(row?.n ?? 0);
}

/** The delivery worker's queue over `db` (the statements above). */
export function createDeliveryQueue(db: Database): DeliveryQueue {
  return {
    claimDue: (options) => claimDueDeliveries(db, options),
    recordAttempt: (delivery, outcome) => recordAttempt(db, delivery, outcome),
    recordSuccesses: (successes) => recordSuccesses(db, successes),
    countPending: () => countPendingDeliveries(db),
    releaseLeases: (deliveries) => releaseLeases(db, deliveries),
  };
}
