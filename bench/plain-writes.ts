/*
 * The plain writes: a bare Fastify server (the process settings of the framework ceiling:
 * compiled JavaScript on plain node, the same logger and level, `PORT`/`HOST`, `GET /healthz`)
 * whose three routes do what `POST /users`, `PATCH /users/{email}` and `DELETE /users/{email}`
 * do to a user, its apps and a count of users per status, with the SQL a developer would write
 * by hand for it, and nothing else: no authentication, validation, audit row, event or
 * multi-level counts. It runs on PostgreSQL (`DATABASE_URL`, a `pg` pool of
 * `DATABASE_POOL_SIZE`, each statement a named prepared statement) or on embedded PGlite
 * (`DATA_DIR`, a data directory the service migrated), on the workspace `PLAIN_WORKSPACE_ID`.
 * `npm run bench:writes` (bench/writes.ts) compares each write of the service with it.
 *
 * The SQL, per request:
 * - add: BEGIN; insert the user; insert its apps (one statement); add 1 to its status's
 *   count row; COMMIT.
 * - change (names, role): BEGIN; lock and read the user by email; update it, returning it
 *   with its apps; COMMIT.
 * - deactivate: BEGIN; update the user's status unless already deactivated; move 1 between
 *   the two count rows; COMMIT.
 */
import Fastify from 'fastify';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';

/** One SQL statement: its name (a prepared statement on PostgreSQL), text and parameters. */
type Query = (name: string, text: string, params: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** Runs `work` in one transaction of the chosen database. */
type Transact = <T>(work: (query: Query) => Promise<T>) => Promise<T>;

/** The counts of the plain routes: one row per workspace and status. */
const COUNTS_TABLE = `create table if not exists plain_user_counts (
  workspace_id int8 not null, status text not null, user_count int8 not null,
  primary key (workspace_id, status))`;

/** Opens the database named by the environment; its transaction runner and its closer. */
async function openDatabase(): Promise<{ transact: Transact; close: () => Promise<void> }> {
  if (process.env.DATABASE_URL) {
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
    await pool.query(COUNTS_TABLE);
    return {
      async transact(work) {
        const client = await pool.connect();
        try {
          await client.query('begin');
          const result = await work(async (name, text, values) => (await client.query<Record<string, unknown>>({ name, text, values })).rows);
          await client.query('commit');
          return result;
        } catch (error) {
          await client.query('rollback').catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  const db = await PGlite.create(process.env.DATA_DIR!);
  await db.exec(COUNTS_TABLE);
  return {
    transact: (work) => db.transaction((tx) => work(async (_name, text, params) => (await tx.query<Record<string, unknown>>(text, params)).rows)),
    close: () => db.close(),
  };
}

const WORKSPACE = Number(process.env.PLAIN_WORKSPACE_ID);
const { transact, close } = await openDatabase();
await transact((query) =>
  query(
    'plain_counts_seed',
    `insert into plain_user_counts (workspace_id, status, user_count)
     select $1::int8, s, (select count(*) from users where workspace_id = $1::int8 and status = s) from unnest(array['active', 'deactivated']) s
     on conflict do nothing`,
    [WORKSPACE],
  ),
);

/** The user's columns as the API shows them, and its apps (`u` is the users row). */
const USER_JSON = `json_build_object('id', u.public_id, 'email', u.email, 'role', u.role, 'first_name', u.first_name,
  'last_name', u.last_name, 'apps', coalesce((select json_agg(json_build_object('name', a.product, 'role', a.role) order by a.position)
    from user_apps a where a.workspace_id = u.workspace_id and a.user_id = u.id), '[]'::json),
  'status', u.status, 'created_at', u.created_at, 'updated_at', u.updated_at) as user`;

interface UserBody {
  user: { email: string; role?: string; first_name?: string; last_name?: string; apps?: Array<{ name: string; role: string }> };
}

const app = Fastify({
  logger: { level: process.env.LOG_LEVEL ?? 'info', redact: ['req.headers["x-api-key"]', 'req.headers.authorization'] },
});
app.get('/healthz', async () => ({ status: 'ok' }));

app.post<{ Body: UserBody }>('/api/external/v2/users', async (request, reply) => {
  const { email, role = 'non_owner', first_name = '-', last_name = '-', apps = [] } = request.body.user;
  const user = await transact(async (query) => {
    const [row] = await query(
      'plain_add_user',
      `insert into users (workspace_id, public_id, email, role, first_name, last_name, status)
       values ($1, $2, $3, $4, $5, $6, 'active')
       returning id, public_id as "id_", created_at, updated_at`,
      [WORKSPACE, crypto.randomUUID(), email, role, first_name, last_name],
    );
    await query(
      'plain_add_apps',
      `insert into user_apps (workspace_id, user_id, product, role, position)
       select $1, $2, a.product, a.role, a.position - 1 from unnest($3::text[], $4::text[]) with ordinality as a(product, role, position)`,
      [WORKSPACE, row!.id, apps.map((a) => a.name), apps.map((a) => a.role)],
    );
    await query('plain_add_count', `update plain_user_counts set user_count = user_count + 1 where workspace_id = $1 and status = 'active'`, [
      WORKSPACE,
    ]);
    return { id: row!.id_, email, role, first_name, last_name, apps, status: 'active', created_at: row!.created_at, updated_at: row!.updated_at };
  });
  return reply.code(201).send({ user });
});

app.patch<{ Params: { email: string }; Body: UserBody }>('/api/external/v2/users/:email', async (request, reply) => {
  const changes = request.body.user;
  const user = await transact(async (query) => {
    const [current] = await query(
      'plain_lock_user',
      'select id, role, first_name, last_name from users where workspace_id = $1 and lower(email) = lower($2) for update',
      [WORKSPACE, request.params.email],
    );
    if (!current) return undefined;
    const [row] = await query(
      'plain_change_user',
      `update users u set role = $3, first_name = $4, last_name = $5, version = u.version + 1, updated_at = now()
       where u.workspace_id = $1 and u.id = $2 returning ${USER_JSON}`,
      [WORKSPACE, current.id, changes.role ?? current.role, changes.first_name ?? current.first_name, changes.last_name ?? current.last_name],
    );
    return row!.user;
  });
  if (!user) return reply.code(404).send({ error: 'user_not_found' });
  return reply.send({ user });
});

app.delete<{ Params: { email: string } }>('/api/external/v2/users/:email', async (request, reply) => {
  const found = await transact(async (query) => {
    const [row] = await query(
      'plain_deactivate_user',
      `update users set status = 'deactivated', version = version + 1, updated_at = now()
       where workspace_id = $1 and lower(email) = lower($2) and status = 'active' returning id`,
      [WORKSPACE, request.params.email],
    );
    if (!row) return false;
    await query(
      'plain_deactivate_count',
      `update plain_user_counts set user_count = user_count + case status when 'active' then -1 else 1 end
       where workspace_id = $1 and status in ('active', 'deactivated')`,
      [WORKSPACE],
    );
    return true;
  });
  return found ? reply.code(204).send() : reply.code(404).send({ error: 'user_not_found' });
});

process.once('SIGTERM', () => void app.close().then(close).then(() => process.exit(0)));
await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
