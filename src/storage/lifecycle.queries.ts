import { sql, type SQL } from 'drizzle-orm';
import type { DueUser, DueWarning, LifecycleRepository } from '../core/lifecycle/lifecycle-repository.ts';
import type { Database } from './database.ts';
import { rowsOf } from './rows.ts';

/*
 * What the scheduler finds due (docs/contract.md Part B, "Access that ends on time"). Every
 * claim is one range of a partial index (`users__due_expiry`, `user_apps__due_expiry`,
 * `users__workspace_last_seen`) read from its earliest entry, limited to one batch, and row-locks
 * the users it returns with `SKIP LOCKED`: replicas sweeping together each take other users,
 * and a batch holds its locks only for its own short transaction.
 */

/** A due row as either driver returns it. */
interface DueRow {
  workspace_id: number | string;
  public_id: string;
  due_at: string | Date;
  reason?: 'expired' | 'inactive';
}

function toDue(row: DueRow): DueUser {
  return { workspaceId: Number(row.workspace_id), userId: row.public_id, dueAt: new Date(row.due_at) };
}

/** The instant `seconds` after `instant` (SQL). */
function plusSeconds(instant: SQL, seconds: SQL): SQL {
  return sql`(${instant} + make_interval(secs => ${seconds}::double precision))`;
}

/** When the user row `u` was last seen: its reported activity, else its creation. */
const lastSeen = sql`coalesce(u.last_active_at, u.created_at)`;

/**
 * True unless user `u` is a last active owner whose end at `dueAt` was deferred already (a
 * `kind` mark): then it waits until another active owner exists, or until it is no owner.
 */
function notDeferred(kind: string, dueAt: SQL): SQL {
  return sql`(u.role <> 'owner'
    or not exists (select 1 from lifecycle_marks m
      where m.workspace_id = u.workspace_id and m.user_id = u.id and m.kind = ${kind} and m.due_at = ${dueAt})
    or (select count(*) from users o where o.workspace_id = u.workspace_id and o.status = 'active' and o.role = 'owner') > 1)`;
}

/** The inactivity policy's due instant of user `u` under policy row `p`. */
const inactivityDue = plusSeconds(lastSeen, sql`p.inactivity_after_seconds`);

/** The scheduler's claims over `db` (see {@link LifecycleRepository}). */
export function createLifecycleRepository(db: Database): LifecycleRepository {
  const due = async (query: SQL): Promise<DueRow[]> => rowsOf<DueRow>(await db.execute(query));
  return {
    async claimExpired(now, limit) {
      const at = now.toISOString();
      const rows = await due(sql`select u.workspace_id, u.public_id, u.expires_at as due_at from users u
        where u.status = 'active' and u.expires_at <= ${at}::timestamptz and ${notDeferred('deferred_expiry', sql`u.expires_at`)}
        order by u.expires_at limit ${limit}
        for update of u skip locked`);
      return rows.map(toDue);
    },

    async claimInactive(now, limit) {
      const at = now.toISOString();
      const rows = await due(sql`select u.workspace_id, u.public_id, ${inactivityDue} as due_at
        from workspace_policies p join users u on u.workspace_id = p.workspace_id
        where p.inactivity_after_seconds is not null and u.status = 'active'
          and (p.inactivity_applies_to = 'all' or u.role <> 'owner')
          and ${lastSeen} <= ${at}::timestamptz - make_interval(secs => p.inactivity_after_seconds::double precision)
          and ${notDeferred('deferred_inactivity', inactivityDue)}
        order by due_at limit ${limit}
        for update of u skip locked`);
      return rows.map(toDue);
    },

    async claimExpiredGrants(now, limit) {
      const at = now.toISOString();
      const rows = await due(sql`select u.workspace_id, u.public_id, g.due_at from (
          select a.workspace_id, a.user_id, min(a.expires_at) as due_at from user_apps a
          where a.expires_at <= ${at}::timestamptz
          group by a.workspace_id, a.user_id order by due_at limit ${limit}
        ) g join users u on u.workspace_id = g.workspace_id and u.id = g.user_id
        for update of u skip locked`);
      return rows.map(toDue);
    },

    async findWarnings(now, limit) {
      const at = sql`${now.toISOString()}::timestamptz`;
      const rows = await due(sql`select w.workspace_id, w.public_id, w.due_at, w.reason from (
          select u.workspace_id, u.id, u.public_id, u.expires_at as due_at, 'expired' as reason, 'warned_expiry' as kind
          from workspace_policies p join users u on u.workspace_id = p.workspace_id
          where p.expiry_warn_before_seconds is not null and u.status = 'active' and u.expires_at > ${at}
            and u.expires_at <= ${plusSeconds(at, sql`p.expiry_warn_before_seconds`)}
          union all
          select u.workspace_id, u.id, u.public_id, ${inactivityDue}, 'inactive', 'warned_inactivity'
          from workspace_policies p join users u on u.workspace_id = p.workspace_id
          where p.inactivity_warn_before_seconds is not null and p.inactivity_after_seconds is not null and u.status = 'active'
            and (p.inactivity_applies_to = 'all' or u.role <> 'owner')
            and ${inactivityDue} > ${at}
            and ${inactivityDue} <= ${plusSeconds(at, sql`p.inactivity_warn_before_seconds`)}
        ) w
        where not exists (select 1 from lifecycle_marks m
          where m.workspace_id = w.workspace_id and m.user_id = w.id and m.kind = w.kind and m.due_at = w.due_at)
        order by w.due_at limit ${limit}`);
      return rows.map((row): DueWarning => ({ ...toDue(row), reason: row.reason! }));
    },

    async nextDue(now) {
      const at = sql`${now.toISOString()}::timestamptz`;
      const [row] = await db.execute(sql`select least(
          (select min(u.expires_at) from users u where u.status = 'active' and u.expires_at > ${at}),
          (select min(a.expires_at) from user_apps a where a.expires_at > ${at}),
          (select min(${plusSeconds(sql`(select min(${lastSeen}) from users u
              where u.workspace_id = p.workspace_id and u.status = 'active'
                and ${lastSeen} > ${at} - make_interval(secs => p.inactivity_after_seconds::double precision))`, sql`p.inactivity_after_seconds`)})
            from workspace_policies p where p.inactivity_after_seconds is not null)
        ) as next`).then((result) => rowsOf<{ next: string | Date | null }>(result));
      return row?.next ? new Date(row.next) : undefined;
    },
  };
}
