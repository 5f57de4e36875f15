/*
 * Seeds benchmark data with set-based SQL (generate_series), through any function that runs
 * one SQL statement, so the same code seeds PostgreSQL (pg) and embedded PGlite. Rows look
 * like what the API writes: every user has a workspace role, names, a status and two apps.
 */
import { DEMO_PRODUCTS } from '../src/core/demo.ts';
import { generateApiKey } from '../src/core/api-keys/api-key-secret.ts';
import { openDatabase } from '../src/storage/database.ts';
import { USER_COUNT_LEVEL_BITS } from '../src/storage/schema.ts';
import { withClient } from '../harness/postgres-cluster.ts';

/**
 * Runs one SQL statement with positional parameters and returns its rows; with `name`, as that
 * prepared statement (where the runner supports it: parsed and planned once per connection).
 */
export type RunSql = (text: string, params?: unknown[], name?: string) => Promise<Array<Record<string, unknown>>>;

/** A seeded workspace: where to send requests and the key that opens it. */
export interface SeededWorkspace {
  readonly id: number;
  readonly subdomain: string;
  readonly apiKey: string;
  /** Users seeded into it (all active), `u1@…` to `u<users>@…`. */
  readonly users: number;
}

/**
 * Migrates the PostgreSQL database at `url` (as the service does at start, so that the seed
 * finds its tables) and runs `work` with a {@link RunSql} over one `pg` client.
 */
export async function withSeedingClient<T>(url: string, work: (run: RunSql) => Promise<T>): Promise<T> {
  await (await openDatabase({ kind: 'postgres', url, poolSize: 1 })).close();
  return withClient(url, (client) =>
    work(async (text, params, name) => (await client.query<Record<string, unknown>>({ text, values: params, ...(name ? { name } : {}) })).rows),
  );
}

/** The email of the `index`-th (1-based) seeded user of a workspace. */
export function seededEmail(subdomain: string, index: number): string {
  return `u${index}@${subdomain}.example`;
}

/** Creates the demo catalogue (analytics, crm, helpdesk) unless it exists. */
export async function seedProducts(run: RunSql): Promise<void> {
  for (const product of DEMO_PRODUCTS) {
    await run('insert into products (name, roles) values ($1, $2) on conflict (name) do nothing', [
      product.name,
      product.roles,
    ]);
  }
}

/** From this many users in one load, the secondary indexes are dropped and built afterwards. */
const BULK_LOAD_USERS = 2_000_000;

/**
 * Drops the indexes of `users` that back no constraint (the primary key stays: ids arrive in
 * order) and returns the statements that build them again, with memory and workers for it.
 */
async function dropSecondaryIndexes(run: RunSql): Promise<string[]> {
  const indexes = await run(
    `select i.indexname as name, i.indexdef as definition from pg_indexes i
     where i.tablename = 'users' and i.schemaname = current_schema()
       and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`,
  );
  for (const index of indexes) await run(`drop index "${String(index.name)}"`);
  return [
    "set maintenance_work_mem = '512MB'",
    'set max_parallel_maintenance_workers = 2',
    ...indexes.map((index) => String(index.definition)),
    'reset maintenance_work_mem',
    'reset max_parallel_maintenance_workers',
  ];
}

/**
 * Creates workspaces with one fresh API key each and `usersEach` active users each (the first
 * an owner, the rest non-owners, each with a crm role and one more app) and their counts, in a handful of
 * set-based statements whatever the count. Foreign-key triggers are skipped while loading
 * (`session_replication_role = replica`, superuser only): every reference is built from rows
 * inserted by the same statements.
 *
 * @param subdomains - lower-case DNS labels, not yet taken.
 * @returns the workspaces in the order given, with their plaintext keys.
 */
export async function seedWorkspaces(run: RunSql, subdomains: readonly string[], usersEach: number): Promise<SeededWorkspace[]> {
  const keys = subdomains.map(() => generateApiKey());
  const rows = await run(
    `insert into workspaces (subdomain, name)
     select s, s from unnest($1::text[]) with ordinality as t(s, n) order by n
     returning id, subdomain`,
    [subdomains],
  );
  const idOf = new Map(rows.map((r) => [String(r.subdomain), Number(r.id)]));
  const ids = subdomains.map((s) => idOf.get(s)!);
  await run(
    `insert into api_keys (workspace_id, prefix, key_hash)
     select w, p, h from unnest($1::int8[], $2::text[], $3::text[]) as t(w, p, h)`,
    [ids, keys.map((k) => k.prefix), keys.map((k) => k.hash)],
  );
  if (usersEach > 0) {
    await run('set session_replication_role = replica');
    // A large load builds the secondary indexes once at the end (sorting, in parallel) rather
    // than inserting ten million random keys (public ids, emails) one by one into them.
    const rebuild = subdomains.length * usersEach >= BULK_LOAD_USERS ? await dropSecondaryIndexes(run) : [];
    try {
      await run(
        `insert into users (workspace_id, email, role, first_name, last_name, status)
         select w.id, 'u' || g || '@' || w.subdomain || '.example',
                case when g = 1 then 'owner' else 'non_owner' end, 'First', 'Last ' || g, 'active'
         from unnest($1::int8[]) as t(wid)
         join workspaces w on w.id = t.wid
         cross join generate_series(1, $2::int) as g
         order by w.id, g`,
        [ids, usersEach],
      );
      await run(
        `insert into user_apps (workspace_id, user_id, product, role, position)
         select u.workspace_id, u.id, 'crm', 'member', 0 from users u where u.workspace_id = any($1::int8[])
         union all
         select u.workspace_id, u.id,
                case when u.id % 2 = 0 then 'analytics' else 'helpdesk' end,
                case when u.id % 2 = 0 then 'viewer' else 'agent' end, 1
         from users u where u.workspace_id = any($1::int8[])`,
        [ids],
      );
      // The exact counts the service keeps, spread over slots as its adds spread them (in key
      // order: level, block, status, slot): the lowest level from the users, every other level
      // from the one below (same slots).
      await run(
        `insert into user_counts (workspace_id, status, level, block, slot, user_count)
         select workspace_id, status, 0, id >> $2::int, (id % 4)::smallint, count(*) from users
         where workspace_id = any($1::int8[]) group by 1, 2, 3, 4, 5 order by 1, 3, 4, 2, 5`,
        [ids, USER_COUNT_LEVEL_BITS[0]],
      );
      for (let level = 1; level < USER_COUNT_LEVEL_BITS.length; level += 1) {
        await run(
          `insert into user_counts (workspace_id, status, level, block, slot, user_count)
           select workspace_id, status, $2::smallint, block >> $3::int, slot, sum(user_count) from user_counts
           where workspace_id = any($1::int8[]) and level = $2::smallint - 1 group by 1, 2, 3, 4, 5 order by 1, 3, 4, 2, 5`,
          [ids, level, USER_COUNT_LEVEL_BITS[level]! - USER_COUNT_LEVEL_BITS[level - 1]!],
        );
      }
    } finally {
      for (const definition of rebuild) await run(definition);
      await run('set session_replication_role = origin');
    }
  }
  return subdomains.map((subdomain, i) => ({ id: ids[i]!, subdomain, apiKey: keys[i]!.key, users: usersEach }));
}

/** Refreshes planner statistics and the visibility map after a bulk load (index-only scans need it). */
export async function vacuumAnalyze(run: RunSql): Promise<void> {
  await run('vacuum (analyze) workspaces, api_keys, products, users, user_apps, user_counts');
}

/**
 * Seeds the catalogue, a workspace `small` of 10,000 users and an empty one `adds` on `url`,
 * then vacuums: the data of the single-section runners (`bench:scenario`, `bench:replicas`).
 */
export async function seedSmallAndAdds(url: string): Promise<{ small: SeededWorkspace; adds: SeededWorkspace }> {
  return withSeedingClient(url, async (run) => {
    await seedProducts(run);
    const [small] = await seedWorkspaces(run, ['small'], 10_000);
    const [adds] = await seedWorkspaces(run, ['adds'], 1);
    await vacuumAnalyze(run);
    return { small: small!, adds: adds! };
  });
}
