import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sendRequest, type ServerProcess } from '../../harness/server-process.ts';
import { spawnedServers, type SpawnedServers } from '../helpers/spawned-server.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { eventually, sleep } from '../reliability/support.ts';
import { json } from '../helpers/json.ts';

/*
 * A bulk import survives a crash (docs/contract.md Part B, "Importing users in bulk"): a real
 * server process is killed with SIGKILL while its import job is part done, restarted on the
 * same storage, and the job then completes with every row's user added exactly once, with
 * exactly one audit entry and one event each.
 */

const API = '/api/external/v2';
const ROWS = 10_000;
const TEST_TIMEOUT = { timeout: 300_000 };

describe(`imports: SIGKILL mid-job, restart, every row applied once [${BACKEND}]`, () => {
  let servers: SpawnedServers | undefined;
  after(async () => {
    await servers?.close();
  });

  test('the job resumes from its last committed batch and completes', TEST_TIMEOUT, async () => {
    servers = await spawnedServers('wum_import_crash', { REQUEST_TIMEOUT_MS: '120000' });
    const { port, storage } = servers;
    const first = await servers.start();
    const { request } = await servers.seed('importer');

    const csv = ['email,role,first_name,last_name,apps', ...Array.from({ length: ROWS }, (_, i) => `crash${i}@example.com,non_owner,Crash,${i},crm:member`)].join('\n');
    const uploaded = await sendRequest(port, 'POST', `${API}/users/imports`, { ...request, raw: { body: csv, type: 'text/csv' }, timeoutMs: 120_000 });
    assert.equal(uploaded.status, 202, uploaded.body);
    const id = json<'startUserImport'>(uploaded).id as string;

    let seen = 0;
    const errors = (server: ServerProcess) => server.stdout().split('\n').filter((l) => /"level":50/.test(l)).slice(0, 2).join('\n');
    await eventually(
      async () => {
        seen = json<'getUserImport'>(await sendRequest(port, 'GET', `${API}/users/imports/${id}`, request)).rows_done;
        return seen > 0;
      },
      60_000,
      `the job has made progress ${errors(first)}`,
    );
    await servers.crash(first);
    assert.ok(seen < ROWS, `killed part way (${seen} of ${ROWS} rows done)`);

    const second = await servers.start();
    let job: Record<string, unknown> = {};
    await eventually(
      async () => {
        job = json<'getUserImport'>(await sendRequest(port, 'GET', `${API}/users/imports/${id}`, request));
        return job.status !== 'running' && job.status !== 'queued';
      },
      180_000,
      'the job finished after the restart',
    );
    assert.equal(job.status, 'completed');
    assert.deepEqual([job.rows_total, job.rows_done, job.added, job.skipped, job.rejected], [ROWS, ROWS, ROWS, 0, 0]);
    const listing = await sendRequest(port, 'GET', `${API}/users?page_size=1`, request);
    assert.equal(json<'listUsers'>(listing).pagination.total_records, ROWS, 'the counts agree with the users');
    second.child.kill('SIGTERM');
    await second.waitForExit(30_000);
    await sleep(100);

    const [counts] = await storage.inspect((query) =>
      query(`select
          (select count(*) from users u join workspaces w on w.id = u.workspace_id where w.subdomain = 'importer')::int as users,
          (select count(distinct lower(u.email)) from users u join workspaces w on w.id = u.workspace_id where w.subdomain = 'importer')::int as emails,
          (select count(*) from user_apps a join workspaces w on w.id = a.workspace_id where w.subdomain = 'importer')::int as apps,
          (select count(*) from audit_events a join workspaces w on w.id = a.workspace_id where w.subdomain = 'importer' and a.action = 'user.created')::int as audited,
          (select count(distinct a.target_id) from audit_events a join workspaces w on w.id = a.workspace_id where w.subdomain = 'importer' and a.action = 'user.created')::int as audited_users,
          (select count(*) from events e join workspaces w on w.id = e.workspace_id where w.subdomain = 'importer' and e.type = 'user.created')::int as events,
          (select count(distinct e.data->'user'->>'email') from events e join workspaces w on w.id = e.workspace_id where w.subdomain = 'importer')::int as event_users,
          (select count(*) from user_import_rows r where r.payload is not null)::int as payloads`),
    );
    assert.deepEqual(counts, { users: ROWS, emails: ROWS, apps: ROWS, audited: ROWS, audited_users: ROWS, events: ROWS, event_users: ROWS, payloads: 0 });
  });
});
