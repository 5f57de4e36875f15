import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { freePort } from '../../harness/free-port.ts';
import { listeningPid, sendRequest, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { LISTENING, START_TIMEOUT_MS, attempt, serverStorage, startServer, type Attempt, type Query, type ServerStorage } from './support.ts';
import { json } from '../helpers/json.ts';

/*
 * Crash safety (docs/security.md): a real server process under hundreds of concurrent adds and
 * removals is killed with SIGKILL mid-flight, then restarted on the same storage. Every change
 * that was acknowledged (2xx received) must be there; a change that was refused must not be;
 * a change in flight may or may not be, but never half of it (no user without its apps, no
 * change without its audit event); and the restarted service is ready and takes requests.
 * PostgreSQL through DATABASE_URL, or the embedded store in DATA_DIR, per WUM_TEST_BACKEND.
 */

const ADMIN_TOKEN = 'crash-admin-token-0123456789';
const API = '/api/external/v2';
const WORKERS = 40;
/** SIGKILL once this many changes were acknowledged; the workers keep as many more in flight. */
const KILL_AFTER_ACKS = 250;
const TEST_TIMEOUT = { timeout: 240_000 };

type Op = { kind: 'add'; firstName: string; apps: Array<{ name: string; role: string }> } | { kind: 'remove' };
type Outcome = 'acked' | 'refused' | 'unknown';
/** The stored state an email should be in: absent, or a status with the add's name and apps. */
type Expected = 'absent' | { status: 'active' | 'deactivated'; firstName: string; apps: Array<{ name: string; role: string }> };

const APPS = [
  [{ name: 'crm', role: 'member' }],
  [{ name: 'crm', role: 'admin' }, { name: 'helpdesk', role: 'agent' }],
  [{ name: 'helpdesk', role: 'supervisor' }],
];

/** Each email's plan: add only; add then remove; add, remove, add again (a reactivation). */
function planFor(i: number): Op[] {
  const add = (n: number): Op => ({ kind: 'add', firstName: `Op${i}-${n}`, apps: APPS[(i + n) % APPS.length]! });
  if (i % 3 === 0) return [add(0)];
  if (i % 3 === 1) return [add(0), { kind: 'remove' }];
  return [add(0), { kind: 'remove' }, add(2)];
}

function apply(state: Expected, op: Op): Expected {
  if (op.kind === 'add') return { status: 'active', firstName: op.firstName, apps: op.apps };
  return state === 'absent' ? 'absent' : { ...state, status: 'deactivated' };
}

/** What a user row looks like when read back. */
interface Stored {
  status: string;
  first_name: string;
  apps: Array<{ name: string; role: string }>;
}

function matches(stored: Stored | undefined, expected: Expected): boolean {
  if (expected === 'absent') return stored === undefined;
  return (
    stored !== undefined &&
    stored.status === expected.status &&
    stored.first_name === expected.firstName &&
    JSON.stringify(stored.apps) === JSON.stringify(expected.apps)
  );
}

/** The storage checks every backend must pass, through a function that runs SQL. */
async function assertNoHalfChanges(query: Query): Promise<void> {
  const withoutApps = await query(`
    select u.email from users u
    where not exists (select 1 from user_apps a where a.workspace_id = u.workspace_id and a.user_id = u.id)`);
  assert.deepEqual(withoutApps, [], 'no user without its apps (every add carried at least one)');
  const untracked = await query(`
    select u.email, u.status,
      (select e.after ->> 'status' from audit_events e
        where e.workspace_id = u.workspace_id and e.target_type = 'user' and e.target_id = u.email
        order by e.id desc limit 1) as audited_status
    from users u`);
  for (const row of untracked) {
    assert.equal(row.audited_status, row.status, `${String(row.email)}: its last audit event shows its stored status`);
  }
  const created = await query(`
    select u.email from users u
    where not exists (select 1 from audit_events e
      where e.workspace_id = u.workspace_id and e.action = 'user.created' and e.target_id = u.email)`);
  assert.deepEqual(created, [], 'every user has its user.created event');
}

describe(`crash safety: SIGKILL under load, restart on the same storage [${BACKEND}]`, () => {
  const spawned: ServerProcess[] = [];
  let storage: ServerStorage | undefined;
  after(async () => {
    for (const server of spawned) server.kill();
    await storage?.remove();
  });

  async function start(): Promise<{ server: ServerProcess; port: number }> {
    const port = await freePort();
    const server = startServer({
      ...storage!.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      // One key sends hundreds of requests a second here; the limit is not what is tested.
      RATE_LIMIT_PER_KEY: '0',
    });
    spawned.push(server);
    await server.waitForOutput(LISTENING, START_TIMEOUT_MS);
    return { server, port };
  }

  test('every acknowledged change survives, no half-change exists, and the service starts clean', TEST_TIMEOUT, async (t) => {
    storage = await serverStorage('wum_crash');
    const first = await start();
    const admin = (method: string, path: string, body?: unknown) =>
      sendRequest(first.port, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
    for (const [name, roles] of [['crm', ['admin', 'member']], ['helpdesk', ['agent', 'supervisor']]] as const) {
      assert.ok([200, 201].includes((await admin('PUT', `/products/${name}`, { roles })).status));
    }
    const workspace = await admin('POST', '/workspaces', { subdomain: 'crash' });
    assert.equal(workspace.status, 201, workspace.body);
    const apiKey: string = json<'createWorkspace'>(workspace).api_key.key;
    const host = (port: number) => `crash.localhost:${port}`;

    // Load: WORKERS workers each take the next email and run its plan, stopping at the first
    // request that is not acknowledged. The server is killed while they run.
    const history = new Map<string, Array<{ op: Op; outcome: Outcome; detail: string }>>();
    let next = 0;
    let acked = 0;
    let killed = false;
    let killedAtAcks = 0;
    const worker = async () => {
      while (!killed) {
        const i = next++;
        const email = `u${i}@crash.example`;
        const steps: Array<{ op: Op; outcome: Outcome; detail: string }> = [];
        history.set(email, steps);
        for (const op of planFor(i)) {
          const result: Attempt =
            op.kind === 'add'
              ? await attempt(first.port, 'POST', `${API}/users`, {
                  host: host(first.port),
                  headers: { 'x-api-key': apiKey },
                  body: { user: { email, role: 'non_owner', first_name: op.firstName, apps: op.apps } },
                })
              : await attempt(first.port, 'DELETE', `${API}/users/${encodeURIComponent(email)}`, {
                  host: host(first.port),
                  headers: { 'x-api-key': apiKey },
                });
          const outcome: Outcome = !result.ok ? 'unknown' : result.res.status < 300 ? 'acked' : 'refused';
          steps.push({ op, outcome, detail: result.ok ? `${result.res.status} ${result.res.body.slice(0, 120)}` : result.error });
          if (outcome !== 'acked') return;
          acked += 1;
          if (acked >= KILL_AFTER_ACKS && !killed) {
            killed = true;
            killedAtAcks = acked;
            first.server.kill(); // SIGKILL to the whole process group, mid-flight
          }
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    assert.ok(killed, 'the server was killed under load');
    assert.equal(await first.server.waitForExit(10_000), 'SIGKILL');
    const unknown = [...history.values()].filter((steps) => steps.at(-1)?.outcome === 'unknown').length;
    assert.ok(unknown > 0, 'requests were in flight when the server died');
    const sent = [...history.values()].flat().length;
    t.diagnostic(`${sent} requests sent by ${WORKERS} workers, ${acked} acknowledged, ${unknown} in flight at SIGKILL`);
    const refused = [...history.values()].flat().filter((s) => s.outcome === 'refused');
    assert.deepEqual(refused.map((s) => s.detail), [], 'nothing was refused before the kill');

    // Restart on the same storage: ready, the data as acknowledged, and new requests work.
    const second = await start();
    const ready = await sendRequest(second.port, 'GET', '/readyz');
    assert.equal(ready.status, 200, ready.body);
    const stored = new Map<string, Stored>();
    for (let page = 1; ; page += 1) {
      const res = await sendRequest(second.port, 'GET', `${API}/users?status=all&page_size=100&page_number=${page}`, {
        host: host(second.port),
        headers: { 'x-api-key': apiKey },
      });
      assert.equal(res.status, 200, res.body);
      for (const user of json<'listUsers'>(res).users as Array<Stored & { email: string }>) stored.set(user.email, user);
      if (json<'listUsers'>(res).users.length < 100) break;
    }
    let survivors = 0;
    for (const [email, steps] of history) {
      let state: Expected = 'absent';
      for (const step of steps.filter((s) => s.outcome === 'acked')) state = apply(state, step.op);
      const last = steps.at(-1);
      const possible = last?.outcome === 'unknown' ? [state, apply(state, last.op)] : [state];
      const actual = stored.get(email);
      assert.ok(
        possible.some((p) => matches(actual, p)),
        `${email}: stored ${JSON.stringify(actual)}, expected one of ${JSON.stringify(possible)} after ${JSON.stringify(steps)}`,
      );
      if (state !== 'absent') survivors += 1;
    }
    assert.ok(survivors >= killedAtAcks / 3, `acknowledged users are back (${survivors})`);
    for (const email of stored.keys()) assert.ok(history.has(email), `${email} was written by this test`);

    const fresh = await sendRequest(second.port, 'POST', `${API}/users`, {
      host: host(second.port),
      headers: { 'x-api-key': apiKey },
      body: { user: { email: 'after-restart@crash.example', role: 'owner', apps: [{ name: 'crm', role: 'admin' }] } },
    });
    assert.equal(fresh.status, 201, fresh.body);

    // The storage itself, read directly (the embedded store once the server has stopped).
    process.kill(listeningPid(second.server.stdout())!, 'SIGTERM');
    assert.equal(await second.server.waitForExit(20_000), 0);
    await storage.inspect(assertNoHalfChanges);
  });
});
