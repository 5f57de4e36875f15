import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { buildApp } from '../../src/http/app.ts';
import { storageDependencies } from '../../src/server/app-dependencies.ts';
import { startImportWorker, type ImportWorker } from '../../src/server/import-worker.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { createStore } from '../../src/storage/store.ts';
import { API, BACKEND, createTestContext, testKeyRing, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, userData } from '../helpers/json.ts';
import { assertStopsAtOnce } from '../helpers/stopped-at-once.ts';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

/** The CSV of the mixed import: one row of each kind, with the outcome each must get. */
const CSV = [
  'email,role,first_name,last_name,apps',
  'new1@example.com,non_owner,New,One,crm:member;analytics:viewer',
  'active@example.com,non_owner,,,',
  'gone@example.com,non_owner,Gone,Back,helpdesk:agent',
  'not-an-email,non_owner,,,',
  'bad@example.com,non_owner,,,nosuch:admin',
  'role@example.com,non_owner,,,crm:nosuchrole',
  'cells@example.com,non_owner',
  'NEW1@example.com,non_owner,,,',
  'apps@example.com,non_owner,,,crm',
  'new2@example.com,owner,,,',
].join('\n');

const EXPECTED_REPORT = [
  { row: 2, email: 'new1@example.com', outcome: 'added', code: null },
  { row: 3, email: 'active@example.com', outcome: 'skipped', code: 'user_already_exists' },
  { row: 4, email: 'gone@example.com', outcome: 'reactivated', code: null },
  { row: 5, email: 'not-an-email', outcome: 'rejected', code: 'validation_failed' },
  { row: 6, email: 'bad@example.com', outcome: 'rejected', code: 'unknown_product' },
  { row: 7, email: 'role@example.com', outcome: 'rejected', code: 'unknown_product_role' },
  { row: 8, email: 'cells@example.com', outcome: 'rejected', code: 'invalid_row' },
  { row: 9, email: 'NEW1@example.com', outcome: 'skipped', code: 'user_already_exists' },
  { row: 10, email: 'apps@example.com', outcome: 'rejected', code: 'invalid_apps' },
  { row: 11, email: 'new2@example.com', outcome: 'added', code: null },
];

const EXPECTED_COUNTS = { rows_total: 10, rows_done: 10, added: 2, reactivated: 1, skipped: 2, rejected: 5 };

describe(`bulk import jobs [${BACKEND}]`, () => {
  let ctx: TestContext;
  let worker: ImportWorker | undefined;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(async () => {
    await worker?.stop();
    await ctx.close();
  });

  const startWorker = () => {
    worker ??= startImportWorker({ store: ctx.store, log: silent, pollMs: 20, sharedConnection: BACKEND === 'pglite' });
  };
  const stopWorker = async () => {
    await worker?.stop();
    worker = undefined;
  };

  /** A workspace with an active user and a deactivated one. */
  async function seeded(): Promise<TestWorkspace> {
    const ws = await ctx.createWorkspace();
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('active@example.com') })).statusCode, 201);
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('gone@example.com', { first_name: 'Old' }) })).statusCode, 201);
    assert.equal((await ctx.api(ws, 'DELETE', '/users/gone@example.com')).statusCode, 204);
    return ws;
  }

  const upload = (ws: TestWorkspace, body: string, type: string) =>
    ctx.api(ws, 'POST', '/users/imports', { body, headers: { 'content-type': type } });

  async function finished(ws: TestWorkspace, id: string) {
    let job: ReturnType<typeof json<'getUserImport'>> | undefined;
    for (let i = 0; i < 600; i += 1) {
      job = json<'getUserImport'>(await ctx.api(ws, 'GET', `/users/imports/${id}`));
      if (['completed', 'failed', 'cancelled'].includes(job.status)) return job;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    // The job as last seen, and every job of the store, say whether it was never claimed or stalled.
    const all = rowsOf(await ctx.database.db.execute(sql`select id, status, lease_owner, lease_until, uploaded_at, rows_done, error from user_import_jobs order by created_at`));
    throw new Error(`import ${id} did not finish: ${JSON.stringify(job)}; jobs: ${JSON.stringify(all)}`);
  }

  /** The audit actions and event types recorded per user email of the workspace since the imports. */
  async function changesOf(ws: TestWorkspace, email: string) {
    const rows = rowsOf<{ source: string; kind: string }>(
      await ctx.database.db.execute(sql`
        select 'audit' as source, a.action as kind from audit_events a join workspaces w on w.id = a.workspace_id
          where w.subdomain = ${ws.subdomain} and lower(a.target_id) = lower(${email})
        union all
        select 'event', e.type from events e join workspaces w on w.id = e.workspace_id
          where w.subdomain = ${ws.subdomain} and lower(e.data->'user'->>'email') = lower(${email})`),
    );
    return rows.map((r) => `${r.source}:${r.kind}`).sort();
  }

  test('a CSV job: 202 with the job and Location, then each row as POST /users would, counts and report exact', async () => {
    const ws = await seeded();
    const res = await upload(ws, CSV, 'text/csv');
    assert.equal(res.statusCode, 202, res.body);
    const job = json<'startUserImport'>(res);
    assert.equal(res.headers.location, `/api/external/v2/users/imports/${job.id}`);
    assert.equal(job.status, 'queued');
    assert.equal(job.rows_total, 10);
    startWorker();
    const done = await finished(ws, job.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(
      Object.fromEntries((Object.keys(EXPECTED_COUNTS) as Array<keyof typeof EXPECTED_COUNTS>).map((k) => [k, done[k]])),
      EXPECTED_COUNTS,
    );
    assert.ok(done.started_at && done.completed_at);

    const report = json<'getUserImportReport'>(await ctx.api(ws, 'GET', `/users/imports/${job.id}/report`));
    assert.deepEqual(
      report.rows.map((r) => ({ row: r.row, email: r.email, outcome: r.outcome, code: r.code })),
      EXPECTED_REPORT,
    );
    assert.match(report.rows[4]!.detail ?? '', /unknown product "nosuch"/);

    const added = json<'getUser'>(await ctx.api(ws, 'GET', '/users/new1%40example.com'));
    assert.equal(added.first_name, 'New');
    assert.deepEqual(added.apps, [{ name: 'crm', role: 'member' }, { name: 'analytics', role: 'viewer' }]);
    const back = json<'getUser'>(await ctx.api(ws, 'GET', '/users/gone%40example.com'));
    assert.equal(back.status, 'active');
    assert.equal(back.first_name, 'Gone');
    assert.deepEqual(back.apps, [{ name: 'helpdesk', role: 'agent' }]);
    assert.equal((await ctx.api(ws, 'GET', '/users/bad%40example.com')).statusCode, 404);

    assert.deepEqual(await changesOf(ws, 'new1@example.com'), ['audit:user.created', 'event:user.created']);
    assert.deepEqual(await changesOf(ws, 'new2@example.com'), ['audit:user.created', 'event:user.created']);
    assert.deepEqual(await changesOf(ws, 'gone@example.com'), [
      'audit:user.created', 'audit:user.deactivated', 'audit:user.reactivated',
      'event:user.created', 'event:user.deactivated', 'event:user.reactivated',
    ]);
    assert.deepEqual(await changesOf(ws, 'active@example.com'), ['audit:user.created', 'event:user.created']);

    // The events are as POST /users writes them: the user as the API shows it, in sequence.
    const feed = json<'listEvents'>(await ctx.api(ws, 'GET', '/events', { query: { limit: '100' } }));
    const { events } = feed;
    const created = events.find((e) => e.type === 'user.created' && userData(e).user.email === 'new1@example.com');
    assert.deepEqual(userData(created!).user, added);
    const sequences = events.map((e) => e.sequence);
    assert.deepEqual(sequences, [...sequences].sort((a, b) => a - b));
    assert.equal(new Set(sequences).size, sequences.length, 'every event has its own sequence');
    const actors = rowsOf<{ actor_type: string; before: unknown; after: { email: string; apps: unknown } }>(
      await ctx.database.db.execute(sql`select a.actor_type, a.before, a.after from audit_events a join workspaces w on w.id = a.workspace_id
        where w.subdomain = ${ws.subdomain} and a.target_id = 'new1@example.com'`),
    );
    assert.equal(actors.length, 1);
    assert.equal(actors[0]!.actor_type, 'api_key');
    assert.equal(actors[0]!.before, null);
    assert.deepEqual(actors[0]!.after, { id: added.id, email: 'new1@example.com', role: 'non_owner', first_name: 'New', last_name: 'One', apps: added.apps, status: 'active', expires_at: null });

    const csv = await ctx.api(ws, 'GET', `/users/imports/${job.id}/report`, { headers: { accept: 'text/csv' } });
    assert.match(csv.headers['content-type'] as string, /^text\/csv/);
    const lines = csv.body.trim().split('\n');
    assert.equal(lines[0], 'row,email,outcome,code,detail');
    assert.equal(lines.length, 11);
    assert.match(lines[1]!, /^2,new1@example.com,added,,$/);
  });

  test('a JSON Lines job: one POST /users body per line, a line that is not JSON rejected malformed_json', async () => {
    const ws = await seeded();
    const lines = [
      JSON.stringify(userBody('j1@example.com', { first_name: 'Jay' })),
      JSON.stringify(userBody('ACTIVE@example.com')),
      '',
      '{"user": nope',
      JSON.stringify(userBody('gone@example.com', { apps: [] })),
      JSON.stringify(userBody('j2@example.com', { apps: [{ name: 'crm', role: 'ghost' }] })),
      JSON.stringify({ user: { email: 'j3@example.com', role: 'non_owner', apps: [], extra: 1 } }),
      JSON.stringify(userBody('j4@example.com', { expires_at: '2001-01-01T00:00:00Z' })),
    ].join('\n');
    const res = await upload(ws, lines, 'application/x-ndjson');
    assert.equal(res.statusCode, 202, res.body);
    startWorker();
    const done = await finished(ws, json<'startUserImport'>(res).id);
    assert.equal(done.status, 'completed');
    const report = json<'getUserImportReport'>(await ctx.api(ws, 'GET', `/users/imports/${done.id}/report`));
    assert.deepEqual(
      report.rows.map((r) => [r.row, r.outcome, r.code]),
      [
        [1, 'added', null],
        [2, 'skipped', 'user_already_exists'],
        [4, 'rejected', 'malformed_json'],
        [5, 'reactivated', null],
        [6, 'rejected', 'unknown_product_role'],
        [7, 'rejected', 'validation_failed'],
        [8, 'rejected', 'expires_at_not_in_future'],
      ],
    );
    assert.deepEqual(
      [done.rows_total, done.added, done.reactivated, done.skipped, done.rejected],
      [7, 1, 1, 1, 4],
    );
    assert.deepEqual(await changesOf(ws, 'j1@example.com'), ['audit:user.created', 'event:user.created']);
  });

  test('one job per workspace: 409 import_in_progress while one is queued; cancel; then another is accepted', async () => {
    await stopWorker();
    const ws = await ctx.createWorkspace();
    const first = await upload(ws, 'email,role\na@example.com,non_owner\nb@example.com,non_owner\n', 'text/csv');
    assert.equal(first.statusCode, 202);
    const second = await upload(ws, 'email,role\nc@example.com,non_owner\n', 'text/csv');
    assert.equal(second.statusCode, 409);
    assert.equal(json<'Problem'>(second).code, 'import_in_progress');
    // Another workspace is not held up.
    assert.equal((await upload(await ctx.createWorkspace(), 'email,role\nc@example.com,non_owner\n', 'text/csv')).statusCode, 202);

    const cancelled = await ctx.api(ws, 'POST', `/users/imports/${json<'startUserImport'>(first).id}/cancel`);
    assert.equal(cancelled.statusCode, 200);
    assert.equal(json<'cancelUserImport'>(cancelled).status, 'cancelled');
    assert.ok(json<'cancelUserImport'>(cancelled).completed_at);
    const report = json<'getUserImportReport'>(await ctx.api(ws, 'GET', `/users/imports/${json<'startUserImport'>(first).id}/report`));
    assert.deepEqual(report.rows.map((r) => r.outcome), ['not_attempted', 'not_attempted']);
    const again = await ctx.api(ws, 'POST', `/users/imports/${json<'startUserImport'>(first).id}/cancel`);
    assert.equal(again.statusCode, 409);
    assert.equal(json<'Problem'>(again).code, 'import_finished');
    assert.equal((await ctx.api(ws, 'GET', '/users/a%40example.com')).statusCode, 404, 'a cancelled job adds nobody');

    const third = await upload(ws, 'email,role\nc@example.com,non_owner\n', 'text/csv');
    assert.equal(third.statusCode, 202);
    startWorker();
    assert.equal((await finished(ws, json<'startUserImport'>(third).id)).added, 1);

    const list = await ctx.api(ws, 'GET', '/users/imports');
    assert.equal(list.statusCode, 200);
    assert.deepEqual(json<'listUserImports'>(list).imports.map((j) => j.id), [json<'startUserImport'>(third).id, json<'startUserImport'>(first).id]);
    assert.equal(json<'listUserImports'>(list).pagination.total_records, 2);
  });

  test('bad uploads are 4xx problems: no header, another media type, an unknown job', async () => {
    const ws = await ctx.createWorkspace();
    const noHeader = await upload(ws, 'a@example.com,non_owner\n', 'text/csv');
    assert.equal(noHeader.statusCode, 422);
    assert.equal(json<'Problem'>(noHeader).code, 'invalid_import_file');
    const empty = await upload(ws, '', 'text/csv');
    assert.equal(empty.statusCode, 422);
    const jsonSent = await ctx.api(ws, 'POST', '/users/imports', { body: { user: {} } });
    assert.equal(jsonSent.statusCode, 415);
    assert.equal(json<'Problem'>(jsonSent).code, 'unsupported_media_type');
    const unknown = await ctx.api(ws, 'GET', '/users/imports/00000000-0000-4000-8000-000000000000');
    assert.equal(unknown.statusCode, 404);
    assert.equal(json<'Problem'>(unknown).code, 'import_not_found');
    assert.equal(json<'Problem'>(await ctx.api(ws, 'GET', '/users/imports/not-a-uuid')).code, 'import_not_found');
    // A failed upload holds nothing up.
    assert.equal((await upload(ws, 'email,role\nz@example.com,non_owner\n', 'text/csv')).statusCode, 202);
  });

  test('a worker stopped while it looks for a job stops then, not after its next poll', async () => {
    // Its next poll is ten minutes away.
    await assertStopsAtOnce(() => startImportWorker({ store: ctx.store, log: silent, pollMs: 600_000, sharedConnection: BACKEND === 'pglite' }));
  });

  test('a queued job wakes the import worker of its process: it starts without waiting for the next poll', async () => {
    await stopWorker();
    // A worker that would look for jobs again only in ten minutes, woken by the store the app writes through (as the server wires them).
    const store = createStore(ctx.database.db, { keyRing: testKeyRing(), onImportQueued: () => sleeper.wake() });
    // What the worker logs, shown if the job does not finish.
    const logged: string[] = [];
    const keep = (...args: unknown[]) => void logged.push(args.map((a) => (a instanceof Object && 'err' in a ? String(a.err) : JSON.stringify(a))).join(' '));
    const sleeper = startImportWorker({ store, log: { info: keep, warn: keep, error: keep }, pollMs: 600_000, sharedConnection: BACKEND === 'pglite' });
    const app = await buildApp(ctx.config, { ...storageDependencies(ctx.config, ctx.database, store), logger: false });
    try {
      const ws = await ctx.createWorkspace();
      const res = await app.inject({
        method: 'POST',
        url: `${API}/users/imports`,
        headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'text/csv' },
        payload: 'email,role\nwoken@example.com,non_owner\n',
      });
      assert.equal(res.statusCode, 202, res.body);
      const done = await finished(ws, json<'startUserImport'>(res).id).catch((error: Error) => {
        throw new Error(`${error.message}; the worker logged: ${JSON.stringify(logged)}`);
      });
      assert.equal(done.status, 'completed', JSON.stringify(logged));
      assert.equal(done.added, 1);
    } finally {
      await app.close();
      await sleeper.stop();
    }
  });
});
