import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { ActorJson } from '../core/actor.ts';
import type { NewWorkspaceEvent, WorkspaceEvent } from '../core/events/event.ts';
import type { EventPruning, EventRepository } from '../core/events/event-repository.ts';
import type { ClaimedDelivery } from '../core/webhooks/delivery-queue.ts';
import type { Database } from './database.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { rowCount, rowsOf } from './rows.ts';
import { previousSecretWhileValid, signingSecrets } from './signing-secrets.ts';

/** The actor of events written before actors were recorded (migration 0008). */
const UNKNOWN_ACTOR: ActorJson = { type: 'system', id: null, label: null };

/** An outbox row joined with its workspace's subdomain → the domain event. */
export function toWorkspaceEvent(row: {
  id: string;
  type: string;
  sequence: number | string;
  createdAt: Date | string;
  subdomain: string;
  data: unknown;
  actor: unknown;
}): WorkspaceEvent {
  return {
    id: row.id,
    type: row.type as WorkspaceEvent['type'],
    sequence: Number(row.sequence),
    createdAt: row.createdAt instanceof Date ? row.createdAt : new Date(row.createdAt),
    subdomain: row.subdomain,
    data: typeof row.data === 'string' ? JSON.parse(row.data) : row.data,
    actor: ((typeof row.actor === 'string' ? JSON.parse(row.actor) : row.actor) as ActorJson | null) ?? UNKNOWN_ACTOR,
  };
}

/**
 * The workspace's events after a sequence, in sequence order, with the workspace's subdomain:
 * the first `limit` entries of the `events__pk` range after the cursor. The limit is a scalar
 * subquery, which the planner cannot evaluate and so takes for a tenth of the rows: reading the
 * range in index order and stopping at the limit is then its cheapest plan whatever the
 * statistics say. With the limit as a value, on tables not analyzed yet (an estimate of a dozen
 * events per workspace, fewer than the limit), it read every event after the cursor from a
 * bitmap and sorted them (docs/performance.md, "Fast on data as it arrives"). The subdomain is
 * a subquery of its own, looked up once: as a join, statistics taken when the table held a
 * few events (an estimate of one event after the cursor) made the planner scan `workspaces`
 * again for every event returned. The cursor is a scalar subquery too: seen as a value past
 * every sequence those statistics know, it made each custom plan look cheaper than the
 * generic one, so PostgreSQL planned the prepared statement anew at every execution.
 */
const eventsAfter = new NamedStatement(
  'wum_events_after',
  () => sql`select e.id, e.type, e.sequence, e.created_at as "createdAt",
      (select w.subdomain from workspaces w where w.id = ${ph('workspaceId')}) as subdomain, e.data, e.actor
    from events e
    where e.workspace_id = ${ph('workspaceId')} and e.sequence > (select ${ph('after')}::bigint)
    order by e.sequence
    limit (select ${ph('limit')}::int)`,
);

/** The events repository: reads of the outbox, by workspace and sequence, and the domain's appends. */
export function createEventRepository(db: Database): EventRepository {
  return {
    async findAfter(workspaceId, after, limit) {
      const rows = await eventsAfter.run<Parameters<typeof toWorkspaceEvent>[0]>(db, { workspaceId, after, limit });
      return rows.map(toWorkspaceEvent);
    },
    append: (event) => appendEvent(db, event),
  };
}

/**
 * Deletes up to `batchSize` events created more than `retentionDays` days ago (and, by
 * cascade, their webhook deliveries), oldest first, and returns how many it deleted. One short
 * statement per batch: it touches only old rows, which no writer appends to, and `SKIP LOCKED`
 * passes over any a concurrent pruner holds. Source: docs/contract.md Part B, Events ("kept 30 days").
 */
export async function pruneEvents(db: Database, retentionDays: number, batchSize: number): Promise<number> {
  const result = await db.execute(sql`delete from events where (workspace_id, sequence) in (
      select workspace_id, sequence from events
      where created_at < now() - make_interval(days => ${retentionDays}::int)
      order by created_at limit ${batchSize}::int for update skip locked
    )`);
  return rowCount(result);
}

/** Affected rows of a statement, as either driver reports them. */

/** The retention pass's port over `db` ({@link pruneEvents}). */
export function createEventPruning(db: Database): EventPruning {
  return { prune: (retentionDays, batchSize) => pruneEvents(db, retentionDays, batchSize) };
}

/**
 * Appends the outbox event of the change of the user row `s` of CTE `source` (if it wrote
 * one): the workspace's next sequence — taken by bumping `workspaces.event_sequence`, whose
 * row lock then orders the workspace's events by commit — and `{user, previous?}` as data;
 * and one webhook delivery of it per enabled endpoint of the workspace that wants its type,
 * so that no crash can lose a delivery (docs/contract.md Part B, Events and webhooks). Three CTEs, to
 * follow others in a WITH list. `user` is the row as the API shows it (JSON), `previous` the
 * changed fields' values before (JSON or null), `type` the event type, `actor` who acted (a
 * `{type, id, label}` JSON object), `extra` further members of `data` (JSON object or null).
 */
export function eventInsert(
  source: string,
  params: {
    readonly workspaceId: SQL | Placeholder;
    readonly type: SQL | Placeholder;
    readonly user: SQL;
    readonly previous: SQL | Placeholder;
    readonly actor: SQL;
    /** Further members of `data` (a JSON object or null), e.g. a policy's `reason`. */
    readonly extra?: SQL | Placeholder;
    /** `source` may hold several rows (a batch): each gets its own sequence. */
    readonly many?: boolean;
    /**
     * The lease, in seconds (0: none), with which the deliveries are written for the writing
     * process's worker ({@link handOffColumn}); without it they are written due.
     */
    readonly leaseSecs?: SQL | Placeholder;
  },
): SQL {
  const { workspaceId, type, user, previous, actor } = params;
  const extra = params.extra ? sql` || coalesce(${params.extra}::jsonb, '{}'::jsonb)` : sql``;
  const from = sql.identifier(source);
  // Several rows (a batch): one bump of the workspace's sequence by their number, each row
  // numbered inside that range.
  const many = params.many === true;
  const rows = many ? sql`(select s.*, row_number() over () as event_ord, count(*) over () as event_total from ${from} s)` : from;
  const sequence = many ? sql`q.event_sequence - s.event_total + s.event_ord` : sql`q.event_sequence`;
  return sql`sequenced as (
      update workspaces set event_sequence = event_sequence + ${many ? sql`(select count(*) from ${from})` : sql`1`}
      where id = ${workspaceId} and exists (select 1 from ${from})
      returning event_sequence${params.leaseSecs ? sql`, subdomain` : sql``}
    ),
    evented as (
      insert into events (workspace_id, sequence, id, type, data, actor)
      select ${workspaceId}, ${sequence}, 'evt_' || replace(gen_random_uuid()::text, '-', ''), ${type}::text,
        jsonb_build_object('user', ${user})
          || case when ${previous}::jsonb is null then '{}'::jsonb else jsonb_build_object('previous', ${previous}::jsonb) end${extra},
        ${actor}
      from ${rows} s, sequenced q
      returning ${params.leaseSecs ? sql`id, type, sequence, created_at, data, actor` : sql`type, sequence`}
    ),
    deliveries as (${deliveriesOf(workspaceId, params.leaseSecs)})`;
}

/**
 * One webhook delivery of each event of CTE `evented` (with `type` and `sequence`) per enabled
 * endpoint of the workspace that wants its type: written with the event, so no crash can lose one.
 * With `leaseSecs`, each is written leased for that many seconds (due at once for 0), and
 * returned for {@link handOffColumn}.
 */
function deliveriesOf(workspaceId: SQL | Placeholder | number, leaseSecs?: SQL | Placeholder): SQL {
  const leased = leaseSecs
    ? { column: sql`, next_attempt_at`, value: sql`, clock_timestamp() + make_interval(secs => ${leaseSecs}::float8)`, returning: sql` returning id, endpoint_id, event_sequence` }
    : { column: sql``, value: sql``, returning: sql`` };
  return sql`insert into webhook_deliveries (workspace_id, endpoint_id, event_sequence${leased.column})
      select ${workspaceId}, ep.id, e.sequence${leased.value} from evented e
      join webhook_endpoints ep on ep.workspace_id = ${workspaceId} and ep.enabled
        and (ep.event_types is null or e.type = any(ep.event_types))${leased.returning}`;
}

/**
 * A column for the final select of a statement whose {@link eventInsert} was given `leaseSecs`:
 * when the lease is more than 0 and the change has deliveries, the event and each delivery with
 * what sending it needs (its endpoint's URL and signing secrets, as stored), as JSON for
 * {@link toHandedOff}; else null. The endpoint is read again by key: an insert returns only its
 * own table's columns. `eventOf`, a condition on the event `e`, picks the row's own event when
 * the statement wrote several (a batch of changes: one event, and its deliveries, per row).
 */
export function handOffColumn(workspaceId: SQL | Placeholder, leaseSecs: SQL | Placeholder, eventOf: SQL = sql`true`): SQL {
  const ofEvent = sql`d.event_sequence = e.sequence`;
  return sql`(select jsonb_build_object(
      'event', jsonb_build_object('id', e.id, 'type', e.type, 'sequence', e.sequence, 'created_at', e.created_at,
        'subdomain', q.subdomain, 'data', e.data, 'actor', e.actor),
      'deliveries', (select jsonb_agg(jsonb_build_object('id', d.id, 'endpoint_id', d.endpoint_id, 'url', ep.url, 'secret', ep.secret,
          'previous_secret', ${previousSecretWhileValid}))
        from deliveries d join webhook_endpoints ep on ep.workspace_id = ${workspaceId} and ep.id = d.endpoint_id where ${ofEvent}))
    from evented e, sequenced q
    where ${leaseSecs}::float8 > 0 and ${eventOf} and exists (select 1 from deliveries d where ${ofEvent}) limit 1)`;
}

/** The JSON of {@link handOffColumn}. */
interface HandOffJson {
  event: { id: string; type: string; sequence: number; created_at: string; subdomain: string; data: unknown; actor: unknown };
  deliveries: Array<{ id: string; endpoint_id: string; url: string; secret: string; previous_secret: string | null }>;
}

/**
 * The deliveries of {@link handOffColumn}'s value (`workspaceId` their workspace), as a claim
 * returns them (no attempt yet); none for null.
 */
export function toHandedOff(workspaceId: number, value: unknown): ClaimedDelivery[] {
  if (value === null || value === undefined) return [];
  const json = (typeof value === 'string' ? JSON.parse(value) : value) as HandOffJson;
  const event = toWorkspaceEvent({ ...json.event, createdAt: json.event.created_at });
  return json.deliveries.map((d) => ({
    workspaceId,
    id: d.id,
    endpointId: d.endpoint_id,
    url: d.url,
    secrets: signingSecrets(d.secret, d.previous_secret),
    attempts: 0,
    event,
  }));
}

/**
 * Appends one event the domain built (its `data` already in the API's names) to the workspace's
 * outbox with the workspace's next sequence, and its webhook deliveries, in one statement
 * (docs/api.md, "Events and webhooks"); returns it as the feed will list it.
 */
async function appendEvent(db: Database, event: NewWorkspaceEvent): Promise<WorkspaceEvent> {
  const workspaceId = sql`${event.workspaceId}::int8`;
  const [row] = rowsOf<Parameters<typeof toWorkspaceEvent>[0]>(
    await db.execute(sql`with sequenced as (
        update workspaces set event_sequence = event_sequence + 1 where id = ${workspaceId}
        returning event_sequence, subdomain
      ),
      evented as (
        insert into events (workspace_id, sequence, id, type, data, actor)
        select ${workspaceId}, q.event_sequence, 'evt_' || replace(gen_random_uuid()::text, '-', ''), ${event.type}::text,
          ${JSON.stringify(event.data)}::jsonb, ${JSON.stringify(event.actor)}::jsonb
        from sequenced q
        returning id, type, sequence, created_at, data, actor
      ),
      deliveries as (${deliveriesOf(workspaceId)})
      select e.id, e.type, e.sequence, e.created_at as "createdAt", q.subdomain, e.data, e.actor from evented e, sequenced q`),
  );
  if (!row) throw new Error(`workspace ${event.workspaceId} vanished while an event was appended to it`);
  return toWorkspaceEvent(row);
}
