// one backend: postgres: PostgreSQL failover (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createConnector } from '../../src/storage/postgres-connector.ts';
import { startFormation, type Formation, type FormationNode } from '../../harness/pg-auto-failover.ts';
import { freePort } from '../../harness/free-port.ts';
import { SERVER_ARGS, sendRequest, spawnServer, type HttpResponse, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { json, userData } from '../helpers/json.ts';

/*
 * The database fails over under write load (docs/contract.md Part B, "A highly available database";
 * docs/operations.md, "PostgreSQL high availability"). A pg_auto_failover formation on
 * loopback: a monitor (health checks every second, a node unhealthy after 2 s), a primary and
 * two standbys with number_sync_standbys 1 (every commit on two servers); the third node has
 * candidate priority 0, so that the second failover goes back to the first primary. Two wum
 * processes use the multi-host DATABASE_URL. Writers add users with an Idempotency-Key and
 * retry every 503 with it after Retry-After, as the SDK does. The primary node is killed whole
 * (pg_autoctl and postgres, SIGKILL) in the middle; later it comes back as a standby and the
 * new primary is killed in turn. Each time: only 201 and 503 (no 500, no hang), writes again
 * within 45 s of the kill and within 5 s of the promotion, /readyz 503 while there is no
 * primary and /healthz 200 throughout, a key revoked afterwards refused by both processes
 * within 1 s, every acknowledged user in the database with its audit row and its event,
 * nothing else, and each of those events delivered to a webhook receiver. PostgreSQL only; every process is killed in `after`.
 */

const ADMIN_TOKEN = 'failover-admin-token-0123456789';
const API = '/api/external/v2';
const START_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT = { timeout: 300_000 };
/** The limits wum runs with here (docs/operations.md suggests the same next to a fast monitor). */
const WUM_LIMITS = { DATABASE_CONNECT_TIMEOUT_MS: '2000', DATABASE_STATEMENT_TIMEOUT_MS: '2000', DATABASE_POOL_SIZE: '5' };
/** No answer may take longer than this: connect 2 s + reply 3 s, with room for a loaded machine. */
const ANSWER_BOUND_MS = 10_000;
/** The client gives up here: an answer this late is a hang. */
const CLIENT_TIMEOUT_MS = 20_000;
const WRITERS = 6;
const LOAD_BEFORE_KILL_MS = 2500;
const LOAD_AFTER_RECOVERY_MS = 2000;
/**
 * docs/contract.md Part B bounds what wum adds: requests reach a promoted standby within 5 s
 * (REACH_AFTER_PROMOTION_MS). The time from the kill to the promotion is pg_auto_failover's: on a
 * loaded 2-core machine the monitor took 10.9-12.1 s to promote, and in one CI run (both suites
 * at once) writes came back 21.8 s after the kill, so the bound from the kill leaves it room and
 * only catches a recovery that never comes in reasonable time.
 */
const RECOVERY_AFTER_KILL_MS = 45_000;
const REACH_AFTER_PROMOTION_MS = 5000;
const REVOCATION_MS = 1000;
/** How long the delivery workers have to send every acknowledged write's event after the switch. */
const DELIVERY_MS = 30_000;

interface Attempt {
  readonly email: string;
  readonly replica: number;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly status: number;
  readonly code?: string;
  readonly retryAfter?: string;
  readonly replayed: boolean;
  readonly error?: string;
}

interface Replica {
  readonly port: number;
  readonly process: ServerProcess;
}

if (BACKEND === 'postgres') {
  describe(`database failover under write load: pg_auto_failover, synchronous standby [${BACKEND}]`, () => {
    let formation: Formation;
    const replicas: Replica[] = [];
    const subdomain = 'failover';
    const host = `${subdomain}.localhost`;
    let apiKey: string;
    /** The webhook endpoint of the workspace: every `user.created` event is sent here. */
    let receiver: WebhookReceiver;
    /** Every logical write acknowledged (201), by email. */
    const acknowledged = new Set<string>();

    const admin = (replica: Replica, method: string, path: string, body?: unknown) =>
      sendRequest(replica.port, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body, timeoutMs: CLIENT_TIMEOUT_MS });

    async function startReplica(): Promise<Replica> {
      const port = await freePort();
      const server = spawnServer(process.execPath, SERVER_ARGS, {
        DATABASE_URL: formation.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        SEED_DEMO: 'false',
        RATE_LIMIT_PER_KEY: '0',
        // Long enough that only LISTEN/NOTIFY (or reading afresh) can explain a refused revoked key.
        CACHE_TTL_MS: '600000',
        // The delivery worker of each process sends to the test's receiver on loopback, and
        // retries quickly, so that a delivery failed during the switch is sent again in time.
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,2s,2s,2s,2s,2s,2s',
        WEBHOOK_POLL_INTERVAL_MS: '100',
        ...WUM_LIMITS,
      });
      const replica = { port, process: server };
      replicas.push(replica);
      const deadline = Date.now() + START_TIMEOUT_MS;
      while ((await sendRequest(port, 'GET', '/readyz', { timeoutMs: 2000 }).catch(() => undefined))?.status !== 200) {
        if (Date.now() > deadline || server.child.exitCode !== null) {
          throw new Error(`wum did not start on the formation:\n${server.stdout().slice(-2000)}\n${server.stderr().slice(-2000)}`);
        }
        await sleep(200);
      }
      return replica;
    }

    /** Direct access to the current primary, through the same connector wum uses. */
    async function onPrimary<T>(work: (query: (text: string, values?: unknown[]) => Promise<Array<Record<string, unknown>>>) => Promise<T>): Promise<T> {
      const client = await createConnector({ url: formation.url, connectTimeoutMs: 5000 }).connect();
      try {
        return await work(async (text, values) => (await client.query<Record<string, unknown>>(text, values)).rows);
      } finally {
        await client.end();
      }
    }

    before(async () => {
      formation = await startFormation({ candidatePriorities: [50, 50, 0] });
      for (let i = 0; i < 2; i += 1) await startReplica();
      const [a] = replicas;
      assert.ok((await admin(a!, 'PUT', '/products/crm', { roles: ['admin', 'member'] })).status < 300);
      const created = await admin(a!, 'POST', '/workspaces', { subdomain });
      assert.equal(created.status, 201, created.body);
      apiKey = json<'createWorkspace'>(created).api_key.key;
      receiver = await startWebhookReceiver();
      const endpoint = await admin(a!, 'POST', `/workspaces/${subdomain}/webhook-endpoints`, { url: receiver.url, event_types: ['user.created'] });
      assert.equal(endpoint.status, 201, endpoint.body);
    });
    after(async () => {
      for (const replica of replicas) replica.process.kill();
      formation?.stop();
      await receiver?.close();
    });

    /**
     * Writers add users until `stop()` resolves, each logical write retried with its key until
     * acknowledged; `/readyz` and `/healthz` of both processes are sampled meanwhile.
     */
    function startLoad() {
      const attempts: Attempt[] = [];
      const health: Array<{ at: number; ready: number; healthy: number }> = [];
      let stopping = false;
      let counter = 0;
      const writer = async (id: number) => {
        while (!stopping) {
          counter += 1;
          const email = `w${id}-${counter}-${randomUUID().slice(0, 8)}@example.com`;
          const key = randomUUID();
          for (let attempt = 0; ; attempt += 1) {
            const replica = (id + attempt) % replicas.length;
            const startedAt = Date.now();
            let res: HttpResponse | undefined;
            let error: string | undefined;
            try {
              res = await sendRequest(replicas[replica]!.port, 'POST', `${API}/users`, {
                host,
                headers: { 'x-api-key': apiKey, 'idempotency-key': key },
                body: { user: { email, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] } },
                timeoutMs: CLIENT_TIMEOUT_MS,
              });
            } catch (e) {
              error = (e as Error).message;
            }
            const code = res && res.status !== 201 ? (() => { try { return json<'Problem'>(res).code as string; } catch { return undefined; } })() : undefined;
            attempts.push({
              email,
              replica,
              startedAt,
              endedAt: Date.now(),
              status: res?.status ?? 0,
              ...(code ? { code } : {}),
              ...(res?.headers['retry-after'] ? { retryAfter: String(res.headers['retry-after']) } : {}),
              replayed: res?.headers['idempotent-replayed'] === 'true',
              ...(error ? { error } : {}),
            });
            if (res?.status === 201) {
              acknowledged.add(email);
              break;
            }
            await sleep(res?.status === 503 ? Number(res.headers['retry-after'] ?? 1) * 1000 : 500);
          }
        }
      };
      const sampler = async () => {
        while (!stopping) {
          const at = Date.now();
          for (const replica of replicas) {
            const [ready, healthy] = await Promise.all(
              ['/readyz', '/healthz'].map((path) => sendRequest(replica.port, 'GET', path, { timeoutMs: 5000 }).then((r) => r.status, () => 0)),
            );
            health.push({ at, ready: ready!, healthy: healthy! });
          }
          await sleep(250);
        }
      };
      const running = [...Array.from({ length: WRITERS }, (_, i) => writer(i)), sampler()];
      return {
        attempts,
        health,
        async stop() {
          stopping = true;
          await Promise.all(running);
        },
      };
    }

    /** When a node other than `old` first reports itself (wait_)primary, sampled every 100 ms. */
    function watchPromotion(old: FormationNode) {
      let promotedAt: number | undefined;
      let promoted: string | undefined;
      let watching = true;
      const done = (async () => {
        while (watching && promotedAt === undefined) {
          const states = await formation.states().catch(() => []);
          const next = states.find((s) => s.name !== old.name && ['wait_primary', 'primary'].includes(s.reportedState));
          if (next) {
            promotedAt = Date.now();
            promoted = next.name;
          }
          await sleep(100);
        }
      })();
      return {
        get promotedAt() {
          return promotedAt;
        },
        get promoted() {
          return promoted;
        },
        async stop() {
          watching = false;
          await done;
        },
      };
    }

    /** Kills the primary under load and checks everything the contract says about the switch. */
    async function failOver(t: TestContext, expectedNext?: string): Promise<void> {
      const old = await formation.primary();
      assert.ok(old, 'a primary before the kill');
      const load = startLoad();
      await sleep(LOAD_BEFORE_KILL_MS);
      const promotion = watchPromotion(old);
      const killedAt = Date.now();
      formation.kill(old);
      // Load goes on until writes have succeeded again for a while (or far too long has passed).
      const deadline = killedAt + 60_000;
      for (;;) {
        const recovered = load.attempts.find((a) => a.status === 201 && a.startedAt > killedAt);
        if (recovered && Date.now() - recovered.endedAt > LOAD_AFTER_RECOVERY_MS) break;
        if (Date.now() > deadline) break;
        await sleep(100);
      }
      await load.stop();
      await promotion.stop();

      const { attempts, health } = load;
      const firstWrite = attempts.filter((a) => a.status === 201 && a.startedAt > killedAt).sort((x, y) => x.endedAt - y.endedAt)[0];
      const refused = attempts.filter((a) => a.status === 503);
      const slowest = Math.max(...attempts.map((a) => a.endedAt - a.startedAt));
      t.diagnostic(
        `killed ${old.name}; ${promotion.promoted ?? 'none'} promoted after ${promotion.promotedAt ? promotion.promotedAt - killedAt : '?'} ms; ` +
          `first write after the kill acknowledged after ${firstWrite ? firstWrite.endedAt - killedAt : '?'} ms; ` +
          `${attempts.length} attempts, ${attempts.filter((a) => a.status === 201).length} acknowledged ` +
          `(${attempts.filter((a) => a.replayed).length} replayed), ${refused.length} × 503 ` +
          `(${[...new Set(refused.map((a) => a.code))].join(', ')}); slowest answer ${slowest} ms`,
      );

      // Only 201 and 503: no 500, no 409 from a retry, no connection error, no hang.
      const unexpected = attempts.filter((a) => a.error || (a.status !== 201 && a.status !== 503));
      assert.deepEqual(unexpected, [], 'every answer is 201 or 503');
      for (const a of refused) {
        assert.ok(a.code === 'database_unavailable' || a.code === 'service_unavailable', `503 code ${a.code}`);
        assert.match(a.retryAfter ?? '', /^\d+$/, 'a 503 says when to retry');
      }
      assert.ok(slowest < ANSWER_BOUND_MS, `every answer within ${ANSWER_BOUND_MS} ms (slowest ${slowest} ms)`);
      assert.ok(refused.length > 0, 'the kill was noticed');

      // Writes again within 45 s of the kill, and within 5 s of the promotion.
      assert.ok(firstWrite, 'writes succeed again after the kill');
      assert.ok(firstWrite.endedAt - killedAt <= RECOVERY_AFTER_KILL_MS, `writes again ${firstWrite.endedAt - killedAt} ms after the kill (promotion after ${promotion.promotedAt ? promotion.promotedAt - killedAt : '?'} ms)`);
      assert.ok(promotion.promotedAt, 'the monitor promoted a standby');
      const reached = attempts.filter((a) => a.status === 201 && a.endedAt >= promotion.promotedAt!).sort((x, y) => x.endedAt - y.endedAt)[0];
      assert.ok(reached && reached.endedAt - promotion.promotedAt <= REACH_AFTER_PROMOTION_MS, 'requests reach the new primary within 5 s of its promotion');
      if (expectedNext) assert.equal(promotion.promoted, expectedNext);

      // /healthz always 200; /readyz 503 at some point while there was no primary, 200 at the end.
      assert.ok(health.every((h) => h.healthy === 200), '/healthz stays 200');
      assert.ok(health.some((h) => h.at >= killedAt && h.ready === 503), '/readyz answered 503 while there was no primary');
      for (const replica of replicas) assert.equal((await sendRequest(replica.port, 'GET', '/readyz')).status, 200);

      // Nothing acknowledged is lost, nothing unacknowledged exists: users, audit rows, events.
      const stored = await onPrimary(async (query) => {
        const users = await query(
          `select u.email from users u join workspaces w on w.id = u.workspace_id where w.subdomain = $1`,
          [subdomain],
        );
        const audited = await query(
          `select a.after->>'email' as email from audit_events a join workspaces w on w.id = a.workspace_id
           where w.subdomain = $1 and a.action = 'user.created'`,
          [subdomain],
        );
        const events = await query(
          `select e.data->'user'->>'email' as email from events e join workspaces w on w.id = e.workspace_id
           where w.subdomain = $1 and e.type = 'user.created'`,
          [subdomain],
        );
        return { users: users.map((r) => r.email), audited: audited.map((r) => r.email), events: events.map((r) => r.email) };
      });
      const sorted = (list: unknown[]) => [...list].map(String).sort();
      assert.deepEqual(sorted(stored.users), sorted([...acknowledged]), 'the users are exactly the acknowledged ones');
      assert.deepEqual(sorted(stored.audited), sorted([...acknowledged]), 'one audit row per acknowledged user');
      assert.deepEqual(sorted(stored.events), sorted([...acknowledged]), 'one event per acknowledged user');

      // The delivery workers carried on across the failover: every acknowledged user's event
      // reached the receiver (at least once: a delivery may repeat, never go missing).
      const delivered = () =>
        new Set(receiver.received.filter((r) => r.status < 300).map((r) => userData(json<'Event'>(r.body)).user.email));
      const deliveryDeadline = Date.now() + DELIVERY_MS;
      let missing = [...acknowledged];
      while (Date.now() < deliveryDeadline) {
        const got = delivered();
        missing = [...acknowledged].filter((email) => !got.has(email));
        if (missing.length === 0) break;
        await sleep(200);
      }
      assert.deepEqual(missing, [], `events of acknowledged writes delivered to the webhook receiver within ${DELIVERY_MS} ms`);
      t.diagnostic(`${acknowledged.size} acknowledged users, ${receiver.received.length} webhook requests received`);
    }

    /** A key used (so cached) by both processes, revoked through one: refused by both within 1 s. */
    async function revocationReachesBoth(t: TestContext): Promise<void> {
      const [a] = replicas;
      const created = await admin(a!, 'POST', `/workspaces/${subdomain}/api-keys`);
      assert.equal(created.status, 201, created.body);
      const { id, key } = json<'createApiKey'>(created);
      const use = (replica: Replica) => sendRequest(replica.port, 'GET', `${API}/users?page_size=1`, { host, headers: { 'x-api-key': key } });
      for (const replica of replicas) assert.equal((await use(replica)).status, 200);
      const revokedAt = performance.now();
      assert.equal((await admin(a!, 'DELETE', `/workspaces/${subdomain}/api-keys/${id}`)).status, 204);
      for (const [index, replica] of replicas.entries()) {
        while ((await use(replica)).status !== 401) {
          assert.ok(performance.now() - revokedAt < REVOCATION_MS, `process ${index + 1} still accepts the revoked key`);
          await sleep(25);
        }
      }
      t.diagnostic(`revoked key refused by both processes ${Math.round(performance.now() - revokedAt)} ms after the revocation`);
    }

    test('the topology: number_sync_standbys 1 and synchronous_commit on, so a commit is on two servers', async () => {
      assert.equal(await formation.numberSyncStandbys(), 1);
      const settings = await onPrimary((query) =>
        query("select current_setting('synchronous_commit') as commit, current_setting('synchronous_standby_names') as names"),
      );
      assert.equal(settings[0]!.commit, 'on');
      assert.match(String(settings[0]!.names), /^ANY 1 \(/);
    });

    test('the primary is killed under write load: 503s only, writes back within 5 s of the promotion, nothing acknowledged lost, revocation within 1 s', TEST_TIMEOUT, async (t) => {
      await failOver(t, 'node2');
      await revocationReachesBoth(t);
    });

    test('the old primary comes back as a standby; the new primary is killed in turn: the same again, the other way', TEST_TIMEOUT, async (t) => {
      const [first] = formation.nodes;
      formation.restart(first!);
      await formation.waitFor(
        'node1 back as a standby',
        (states) => states.every((s) => s.reportedState === s.goalState && (s.name === 'node1' ? s.reportedState === 'secondary' : ['primary', 'secondary'].includes(s.reportedState))),
        120_000,
      );
      await failOver(t, 'node1');
      await revocationReachesBoth(t);
    });
  });
}
