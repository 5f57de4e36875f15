import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Races (docs/security.md): add, deactivate and reactivate of one email interleaved, and idempotent
 * retries racing, on two app instances over one database (two replicas). The database
 * decides every race; these tests check that what it decided is a serial history: every
 * successful change has exactly one audit event, and the events replay to the end state.
 */

interface AuditEvent {
  id: number;
  action: string;
  request_id: string;
  target_id: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/** A request sent in a race, and what came back. */
interface Outcome {
  readonly kind: 'add' | 'remove';
  readonly email: string;
  readonly requestId: string;
  readonly res: LightMyRequestResponse;
}

/** Resolves on the next turn of the event loop (see fuzz.test.ts: keeps timers alive). */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

const APP_CHOICES = [
  [{ name: 'crm', role: 'member' }],
  [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }],
  [{ name: 'helpdesk', role: 'agent' }],
  [],
];

describe(`races [${BACKEND}]`, () => {
  let ctx: TestContext;
  /** Two instances on one database: requests alternate between them, as between replicas. */
  let replicas: FastifyInstance[];
  let sequence = 0;

  async function auditTrail(ws: TestWorkspace): Promise<AuditEvent[]> {
    const events: AuditEvent[] = [];
    for (let page = 1; ; page += 1) {
      const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100&page_number=${page}`);
      assert.equal(res.statusCode, 200, res.body);
      const batch = json<'listWorkspaceAuditEvents'>(res).audit_events as AuditEvent[];
      events.push(...batch);
      if (batch.length < 100) return events;
    }
  }

  function send(ws: TestWorkspace, kind: 'add' | 'remove', email: string, extra: Record<string, string> = {}, body?: object): Promise<Outcome> {
    sequence += 1;
    const requestId = `race-${process.pid}-${sequence}`;
    const app = replicas[sequence % replicas.length]!;
    const headers = { host: ws.host, 'x-api-key': ws.apiKey, 'x-request-id': requestId, ...extra };
    return nextTurn().then(async () => ({
      kind,
      email,
      requestId,
      res:
        kind === 'add'
          ? await app.inject({ method: 'POST', url: `${API}/users`, headers, payload: body ?? userBody(email) })
          : await app.inject({ method: 'DELETE', url: `${API}/users/${encodeURIComponent(email)}`, headers }),
    }));
  }

  before(async () => {
    ctx = await createTestContext();
    replicas = [ctx.app, await ctx.buildApp()];
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('add vs deactivate vs reactivate of one email, interleaved: a serial history with a complete audit trail', async () => {
    const ws = await ctx.createWorkspace('interleave');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('owner@example.com', { role: 'owner' }) })).statusCode, 201);
    const emails = ['ada@example.com', 'grace@example.com', 'edsger@example.com'];
    const sent: Array<Promise<Outcome>> = [];
    let choice = 0;
    for (let round = 0; round < 14; round += 1) {
      const roundStart = sent.length;
      for (const email of emails) {
        // Two adds (the second usually a reactivation or a conflict) per removal, all in flight at once.
        for (const kind of ['add', 'remove', 'add'] as const) {
          choice += 1;
          const body = userBody(email, {
            role: choice % 5 === 0 ? 'owner' : 'non_owner',
            first_name: `First${choice}`,
            apps: APP_CHOICES[choice % APP_CHOICES.length],
          });
          sent.push(send(ws, kind, email, {}, body));
        }
      }
      // Rounds overlap: the next starts while this one is still in flight. Every fourth round is
      // waited for, so that the next one starts where it left each user: a removal that round
      // made is then either undone by its own second add or by the next round's first, which
      // keeps reactivation in the race however the requests of a round happen to be ordered.
      if (round % 4 === 3) await Promise.all(sent.slice(roundStart));
      else await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const outcomes = await Promise.all(sent);
    const byRequest = new Map(outcomes.map((o) => [o.requestId, o]));
    for (const { kind, res } of outcomes) {
      const allowed = kind === 'add' ? [201, 409] : [204, 404, 409];
      assert.ok(allowed.includes(res.statusCode), `${kind} → ${res.statusCode} ${res.body}`);
      if (res.statusCode === 409) assert.equal(json<'Problem'>(res).code, kind === 'add' ? 'user_already_exists' : 'last_owner');
    }

    const trail = await auditTrail(ws);
    for (const email of emails) {
      const events = trail.filter((e) => e.target_id === email);
      // Replay the events in commit order: each starts from the state the previous one left.
      let state = null as Record<string, unknown> | null;
      for (const event of events) {
        if (event.action === 'user.created') assert.equal(state, null, `${email}: created twice`);
        if (event.action === 'user.reactivated') assert.equal(state?.status, 'deactivated', `${email}: reactivated while ${String(state?.status)}`);
        if (event.action === 'user.deactivated') assert.equal(state?.status, 'active', `${email}: deactivated while ${String(state?.status)}`);
        assert.deepEqual(event.before, state, `${email}: event ${event.id} starts where the previous one ended`);
        state = event.after;
        // The response of the request that made the change shows exactly that change.
        const origin = byRequest.get(event.request_id);
        assert.ok(origin, `event ${event.id} comes from one of our requests`);
        if (event.action === 'user.deactivated') assert.equal(origin.res.statusCode, 204);
        else {
          assert.equal(origin.res.statusCode, 201);
          const user = json<Record<string, unknown>>(origin.res);
          for (const field of ['email', 'role', 'first_name', 'last_name', 'apps', 'status']) {
            assert.deepEqual(user[field], (event.after as Record<string, unknown>)[field], `${field} of ${event.request_id}`);
          }
        }
      }
      // The end state is what the replay ends with.
      const stored = json<Record<string, unknown>>(await ctx.api(ws, 'GET', `/users/${email}`));
      assert.ok(state, `${email} exists`);
      for (const field of ['email', 'role', 'first_name', 'last_name', 'apps', 'status']) {
        assert.deepEqual(stored[field], state[field], `${email}: stored ${field} = replayed ${field}`);
      }
      // Every successful change has its event, and nothing else has one.
      const mine = outcomes.filter((o) => o.email === email);
      const changedBy = new Set(events.map((e) => e.request_id));
      for (const o of mine) {
        if (o.kind === 'add') assert.equal(changedBy.has(o.requestId), o.res.statusCode === 201, `add ${o.requestId} → ${o.res.statusCode}`);
        if (o.kind === 'remove' && o.res.statusCode !== 204) assert.ok(!changedBy.has(o.requestId));
      }
      assert.equal(changedBy.size, events.length, 'one event per request at most');
    }
    assert.ok(trail.filter((e) => e.action === 'user.reactivated').length > 0, 'the race exercised reactivation');
    assert.ok(trail.filter((e) => e.action === 'user.deactivated').length > 0, 'and deactivation');
    // The workspace kept an owner throughout (last-owner rule under the same race).
    const owners = await ctx.api(ws, 'GET', '/users', { query: { page_size: '100' } });
    assert.ok(json<'listUsers'>(owners).users.some((u: { role: string }) => u.role === 'owner'));
  });

  test('N identical POST /users with one Idempotency-Key at once, on two replicas: one applied, the rest replays or 409 in use', async () => {
    const ws = await ctx.createWorkspace('idem-add');
    const key = `idem-add-${process.pid}`;
    const body = userBody('once@example.com');
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => send(ws, 'add', 'once@example.com', { 'idempotency-key': key }, body)));
    const applied = outcomes.filter((o) => o.res.statusCode === 201 && o.res.headers['idempotent-replayed'] === undefined);
    const replayed = outcomes.filter((o) => o.res.headers['idempotent-replayed'] === 'true');
    const inUse = outcomes.filter((o) => o.res.statusCode === 409);
    assert.equal(applied.length, 1, 'exactly one request ran');
    assert.equal(applied.length + replayed.length + inUse.length, outcomes.length, outcomes.map((o) => o.res.statusCode).join(','));
    for (const o of inUse) {
      assert.equal(json<'Problem'>(o.res).code, 'idempotency_key_in_use');
      assert.equal(o.res.headers['retry-after'], '1');
    }
    for (const o of replayed) {
      assert.equal(o.res.statusCode, 201);
      assert.equal(o.res.body, applied[0]!.res.body, 'a replay is the first response, byte for byte');
    }
    // A retry after the race is a replay too.
    const later = await send(ws, 'add', 'once@example.com', { 'idempotency-key': key }, body);
    assert.equal(later.res.headers['idempotent-replayed'], 'true');
    assert.equal(later.res.body, applied[0]!.res.body);
    const users = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'all' } }));
    assert.equal(users.total_count, 1, 'never two users');
    const events = (await auditTrail(ws)).filter((e) => e.target_id === 'once@example.com');
    assert.deepEqual(events.map((e) => [e.action, e.request_id]), [['user.created', applied[0]!.requestId]], 'never two audit events');
  });

  test('N identical DELETE with one Idempotency-Key at once: one deactivation, one event', async () => {
    const ws = await ctx.createWorkspace('idem-del');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('leaver@example.com') })).statusCode, 201);
    const key = `idem-del-${process.pid}`;
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => send(ws, 'remove', 'leaver@example.com', { 'idempotency-key': key })));
    const applied = outcomes.filter((o) => o.res.statusCode === 204 && o.res.headers['idempotent-replayed'] === undefined);
    assert.equal(applied.length, 1);
    for (const o of outcomes) {
      if (o === applied[0]) continue;
      const replay = o.res.statusCode === 204 && o.res.headers['idempotent-replayed'] === 'true';
      const inUse = o.res.statusCode === 409 && json<'Problem'>(o.res).code === 'idempotency_key_in_use';
      assert.ok(replay || inUse, `${o.res.statusCode} ${o.res.body}`);
    }
    const events = (await auditTrail(ws)).filter((e) => e.action === 'user.deactivated');
    assert.deepEqual(events.map((e) => e.request_id), [applied[0]!.requestId]);
  });

  test('retries racing with different keys or none: still one user, one event; the loser is told why', async () => {
    const ws = await ctx.createWorkspace('idem-mixed');
    const body = userBody('mixed@example.com');
    const outcomes = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        send(ws, 'add', 'mixed@example.com', i % 3 === 0 ? {} : { 'idempotency-key': `mixed-${i % 4}` }, body),
      ),
    );
    const applied = outcomes.filter((o) => o.res.statusCode === 201 && o.res.headers['idempotent-replayed'] === undefined);
    assert.equal(applied.length, 1, outcomes.map((o) => `${o.res.statusCode}:${o.res.headers['idempotent-replayed'] ?? ''}`).join(' '));
    for (const o of outcomes) {
      if (o === applied[0]) continue;
      const code = o.res.statusCode >= 400 ? json<'Problem'>(o.res).code : 'replayed';
      assert.ok(['user_already_exists', 'idempotency_key_in_use', 'replayed'].includes(code), `${o.res.statusCode} ${o.res.body}`);
      if (code === 'replayed') assert.equal(o.res.headers['idempotent-replayed'], 'true');
    }
    const events = (await auditTrail(ws)).filter((e) => e.target_id === 'mixed@example.com');
    assert.deepEqual(events.map((e) => e.request_id), [applied[0]!.requestId]);
    assert.equal(json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'all' } })).total_count, 1);
  });
});
