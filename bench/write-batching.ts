/*
 * `node --import tsx bench/write-batching.ts [--seconds S] [--turns N]`: what a change of a user
 * costs PostgreSQL as one statement per change (as the service writes today: ten connections,
 * each its own change) against several changes in one statement (what a write combiner would
 * send), on a throw-away cluster seeded like `npm run bench` (a workspace of 10,000 users).
 * The statement is a first-name change shaped like the service's (docs/performance.md, "Writes
 * against the plain SQL"): the user row, its audit row with before and after, and its event
 * with the workspace's next sequence; the batched one does the same for each row of arrays
 * (`unnest`), bumping the sequence once by their number. Users are spread over the workspace and
 * a batch's rows are taken in id order. Prints, per turn, the rate and the database's CPU per
 * change of each shape, then each shape's ratio to one statement per change from ten
 * connections, by the median of the turns.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { watchMachineLoad } from './machine-load.ts';
import { median } from './measurement.ts';
import { postmasterPid, sampleUsage } from './processes.ts';
import { seedSmallAndAdds } from './seed.ts';

const load = watchMachineLoad();
const { values: options } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, turns: { type: 'string', default: '2' } } });

/** One change per statement: `$1` workspace, `$2` user row id, `$3` first name, `$4` the audit's before and after. */
const SINGLE = `with updated as (
    update users set first_name = $3, version = version + 1, updated_at = now() where workspace_id = $1 and id = $2
    returning id, public_id, email, first_name, last_name, role, status),
  audited as (insert into audit_events (workspace_id, actor_type, actor_id, actor_label, request_id, action, target_type, target_id, user_id, before, after)
    select $1, 'api_key', 'k1', 'bench', 'r', 'user.updated', 'user', s.email, s.public_id, $4::jsonb, $4::jsonb from updated s),
  sequenced as (update workspaces set event_sequence = event_sequence + 1 where id = $1 and exists (select 1 from updated) returning event_sequence),
  evented as (insert into events (workspace_id, sequence, id, type, data, actor)
    select $1, q.event_sequence, 'evt_' || replace(gen_random_uuid()::text, '-', ''), 'user.updated', jsonb_build_object('user', to_jsonb(s)), '{}'::jsonb
    from updated s, sequenced q)
  select id from updated`;

/** The same for each row of `$2` (row ids), `$3` (first names), `$4` (audit snapshots). */
const BATCH = `with b as (select * from unnest($2::int8[], $3::text[], $4::jsonb[]) with ordinality as b(id, first_name, snapshot, ord)),
  updated as (
    update users u set first_name = b.first_name, version = u.version + 1, updated_at = now() from b where u.workspace_id = $1 and u.id = b.id
    returning u.id, u.public_id, u.email, u.first_name, u.last_name, u.role, u.status, b.snapshot, b.ord),
  numbered as (select s.*, row_number() over (order by s.ord) as n, count(*) over () as total from updated s),
  audited as (insert into audit_events (workspace_id, actor_type, actor_id, actor_label, request_id, action, target_type, target_id, user_id, before, after)
    select $1, 'api_key', 'k1', 'bench', 'r', 'user.updated', 'user', s.email, s.public_id, s.snapshot, s.snapshot from updated s),
  sequenced as (update workspaces set event_sequence = event_sequence + (select count(*) from updated) where id = $1 and exists (select 1 from updated)
    returning event_sequence),
  evented as (insert into events (workspace_id, sequence, id, type, data, actor)
    select $1, q.event_sequence - s.total + s.n, 'evt_' || replace(gen_random_uuid()::text, '-', ''), 'user.updated',
      jsonb_build_object('user', to_jsonb(s) - 'snapshot' - 'ord' - 'n' - 'total'), '{}'::jsonb
    from numbered s, sequenced q)
  select id from updated`;

/** The shapes measured: connections, and changes per statement. */
const SHAPES = [
  { connections: 10, size: 1 },
  { connections: 1, size: 1 },
  { connections: 2, size: 5 },
  { connections: 1, size: 10 },
  { connections: 2, size: 10 },
] as const;

const cluster = await startPostgresCluster();
if (!cluster) throw new Error('bench/write-batching.ts needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
try {
  const { small } = await seedSmallAndAdds(cluster.url);
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  const workspace = (await admin.query<{ id: string }>('select id from workspaces where subdomain = $1', [small.subdomain])).rows[0]!.id;
  const ids = (await admin.query<{ id: string }>('select id from users where workspace_id = $1 order by id', [workspace])).rows.map((r) => r.id);
  await admin.end();
  const snapshot = JSON.stringify({ email: 'someone@example.com', role: 'non_owner', first_name: 'Ada', apps: [{ name: 'crm', role: 'member' }] });
  const database = await postmasterPid(cluster.url);
  let picked = 0;
  // A stride prime to the workspace's size visits its users in an order unrelated to their ids.
  const pick = () => ids[(picked++ * 7919) % ids.length]!;

  /** Runs `shape` for `seconds`; its rate and the database's CPU per change (µs). */
  async function run(shape: (typeof SHAPES)[number], seconds: number) {
    const clients = await Promise.all(
      Array.from({ length: shape.connections }, async () => {
        const client = new pg.Client({ connectionString: cluster!.url });
        await client.connect();
        return client;
      }),
    );
    let changes = 0;
    const until = Date.now() + seconds * 1000;
    const cpu = sampleUsage(database);
    const started = performance.now();
    await Promise.all(
      clients.map(async (client) => {
        while (Date.now() < until) {
          if (shape.size === 1) {
            await client.query({ name: 'single', text: SINGLE, values: [workspace, pick(), `N${picked}`, snapshot] });
          } else {
            const rows = Array.from({ length: shape.size }, pick).sort((a, b) => Number(a) - Number(b));
            await client.query({ name: 'batch', text: BATCH, values: [workspace, rows, rows.map((_, i) => `N${picked + i}`), rows.map(() => snapshot)] });
          }
          changes += shape.size;
        }
      }),
    );
    const perSecond = changes / ((performance.now() - started) / 1000);
    const databaseUs = (cpu.stop().cpuPercent / 100 / perSecond) * 1e6;
    await Promise.all(clients.map((c) => c.end()));
    return { perSecond, databaseUs };
  }

  const figures = SHAPES.map(() => ({ rates: [] as number[], cpu: [] as number[] }));
  const label = (shape: (typeof SHAPES)[number]) => `${shape.connections} connection${shape.connections > 1 ? 's' : ''}, ${shape.size} change${shape.size > 1 ? 's' : ''} a statement`;
  for (let turn = 1; turn <= Number(options.turns); turn += 1) {
    for (const [i, shape] of SHAPES.entries()) {
      await run(shape, 2); // warm-up: the statement prepared, the pages read
      const { perSecond, databaseUs } = await run(shape, Number(options.seconds));
      figures[i]!.rates.push(perSecond);
      figures[i]!.cpu.push(databaseUs);
      process.stdout.write(`turn ${turn}, ${label(shape)}: ${perSecond.toFixed(0)} changes/s, database ${databaseUs.toFixed(0)} µs per change\n`);
    }
  }
  const base = { rate: median(figures[0]!.rates), cpu: median(figures[0]!.cpu) };
  for (const [i, shape] of SHAPES.entries()) {
    const rate = median(figures[i]!.rates);
    const cpu = median(figures[i]!.cpu);
    process.stdout.write(
      `${label(shape)}: ${rate.toFixed(0)} changes/s (${load.ratio(rate / base.rate)}), database ${cpu.toFixed(0)} µs per change (${load.ratio(cpu / base.cpu)})\n`,
    );
  }
  process.stdout.write(`${load.summary()}\n`);
} finally {
  cluster.stop();
}
