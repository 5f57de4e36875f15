import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { createIdempotencyStore } from '../../src/storage/idempotency.queries.ts';
import { idempotencyKeys } from '../../src/storage/schema.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

describe(`Idempotency-Key [${BACKEND}]`, () => {
  let ctx: TestContext;
  let keyCounter = 0;

  /** An idempotency key no other request of this file uses. */
  const newKey = () => `idem-${process.pid}-${++keyCounter}`;
  const withKey = (key: string, headers: Record<string, string> = {}) => ({ 'idempotency-key': key, ...headers });

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, code);
  }

  function assertReplayOf(replay: LightMyRequestResponse, first: LightMyRequestResponse): void {
    assert.equal(replay.statusCode, first.statusCode);
    assert.equal(replay.body, first.body, 'the same body, byte for byte');
    assert.equal(replay.headers['content-type'], first.headers['content-type']);
    for (const name of ['location', 'etag']) assert.equal(replay.headers[name], first.headers[name], `the same ${name}`);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(first.headers['idempotent-replayed'], undefined, 'the first response is not a replay');
  }

  async function totalUsers(ws: TestWorkspace): Promise<number> {
    return json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'all' } })).total_count;
  }

  async function auditActions(ws: TestWorkspace): Promise<string[]> {
    const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    return json<'listWorkspaceAuditEvents'>(res).audit_events.map((e: { action: string }) => e.action);
  }

  async function workspaceId(ws: TestWorkspace): Promise<number> {
    return (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!.id;
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('POST /users retried with the same key and body: same 201 and body, replayed, created once', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const body = userBody('once@example.com', { first_name: 'Once' });
    const first = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(first.statusCode, 201, first.body);
    assert.ok(first.headers.etag && first.headers.location, 'the created user has its ETag and Location');
    const retry = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertReplayOf(retry, first);
    assert.equal(retry.headers.location, first.headers.location);
    assert.deepEqual(json<'addUser'>(retry), json<'addUser'>(first));
    const third = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertReplayOf(third, first);

    assert.equal(await totalUsers(ws), 1);
    assert.deepEqual((await auditActions(ws)).filter((a) => a.startsWith('user.')), ['user.created']);
  });

  test('the same body with its keys in another order is the same request', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const first = await ctx.api(ws, 'POST', '/users', {
      body: { user: { email: 'order@example.com', role: 'non_owner', apps: [] } },
      headers: withKey(key),
    });
    assert.equal(first.statusCode, 201);
    const retry = await ctx.api(ws, 'POST', '/users', {
      body: { user: { apps: [], role: 'non_owner', email: 'order@example.com' } },
      headers: withKey(key),
    });
    assertReplayOf(retry, first);
  });

  test('without a key, a retry is a new request (409 the second time)', async () => {
    const ws = await ctx.createWorkspace('idem');
    const body = userBody('nokey@example.com');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body })).statusCode, 201);
    const again = await ctx.api(ws, 'POST', '/users', { body });
    assertProblem(again, 409, 'user_already_exists');
    assert.equal(again.headers['idempotent-replayed'], undefined);
  });

  test('a first 409 is replayed, even after the conflict is gone', async () => {
    const ws = await ctx.createWorkspace('idem');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('taken@example.com', { first_name: 'Orig' }) })).statusCode, 201);
    const key = newKey();
    const body = userBody('taken@example.com', { first_name: 'Retry' });
    const first = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertProblem(first, 409, 'user_already_exists');

    assert.equal((await ctx.api(ws, 'DELETE', '/users/taken@example.com')).statusCode, 204);
    const retry = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertReplayOf(retry, first);
    assert.equal(json<'Problem'>(retry).code, 'user_already_exists');

    const user = json<'getUser'>(await ctx.api(ws, 'GET', '/users/taken@example.com'));
    assert.equal(user.status, 'deactivated', 'the replay did not reactivate the user');
    assert.equal(user.first_name, 'Orig');
  });

  test('a first 422 is replayed, even after the product exists', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const body = userBody('late@example.com', { apps: [{ name: 'idem-late', role: 'member' }] });
    const first = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertProblem(first, 422, 'unknown_product');

    assert.equal((await ctx.admin('PUT', '/products/idem-late', { roles: ['member'] })).statusCode, 201);
    const retry = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertReplayOf(retry, first);
    assertProblem(await ctx.api(ws, 'GET', '/users/late@example.com'), 404, 'user_not_found');

    const fresh = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(newKey()) });
    assert.equal(fresh.statusCode, 201, 'a new key runs the request again');
  });

  test('the same key with a different body → 422 idempotency_key_reused, nothing created', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const first = await ctx.api(ws, 'POST', '/users', { body: userBody('first@example.com'), headers: withKey(key) });
    assert.equal(first.statusCode, 201);
    for (const body of [
      userBody('second@example.com'),
      userBody('first@example.com', { role: 'owner' }),
      userBody('first@example.com', { first_name: 'Changed' }),
    ]) {
      const res = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
      assertProblem(res, 422, 'idempotency_key_reused');
      assert.equal(res.headers['idempotent-replayed'], undefined);
    }
    assertProblem(await ctx.api(ws, 'GET', '/users/second@example.com'), 404, 'user_not_found');
    assert.equal(json<'getUser'>(await ctx.api(ws, 'GET', '/users/first@example.com')).role, 'non_owner');
    const retry = await ctx.api(ws, 'POST', '/users', { body: userBody('first@example.com'), headers: withKey(key) });
    assertReplayOf(retry, first);
  });

  test('the same key on another route or another user → 422 idempotency_key_reused', async () => {
    const ws = await ctx.createWorkspace('idem');
    await ctx.api(ws, 'POST', '/users', { body: userBody('a@example.com') });
    await ctx.api(ws, 'POST', '/users', { body: userBody('b@example.com') });
    const key = newKey();
    assert.equal((await ctx.api(ws, 'DELETE', '/users/a@example.com', { headers: withKey(key) })).statusCode, 204);
    assertProblem(await ctx.api(ws, 'DELETE', '/users/b@example.com', { headers: withKey(key) }), 422, 'idempotency_key_reused');
    assert.equal(json<'getUser'>(await ctx.api(ws, 'GET', '/users/b@example.com')).status, 'active', 'b was not deactivated');
    assertProblem(
      await ctx.api(ws, 'POST', '/users', { body: userBody('c@example.com'), headers: withKey(key) }),
      422,
      'idempotency_key_reused',
    );
    assertProblem(await ctx.api(ws, 'GET', '/users/c@example.com'), 404, 'user_not_found');
  });

  test('DELETE /users/{email} retried with the same key → 204 replayed, not run again', async () => {
    const ws = await ctx.createWorkspace('idem');
    await ctx.api(ws, 'POST', '/users', { body: userBody('leaver@example.com') });
    const key = newKey();
    const first = await ctx.api(ws, 'DELETE', '/users/leaver@example.com', { headers: withKey(key) });
    assert.equal(first.statusCode, 204);
    assert.equal(first.headers['idempotent-replayed'], undefined);

    const rejoined = await ctx.api(ws, 'POST', '/users', { body: userBody('leaver@example.com') });
    assert.equal(rejoined.statusCode, 201, 'reactivated in between');
    const retry = await ctx.api(ws, 'DELETE', '/users/leaver@example.com', { headers: withKey(key) });
    assert.equal(retry.statusCode, 204);
    assert.equal(retry.body, '');
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(json<'getUser'>(await ctx.api(ws, 'GET', '/users/leaver@example.com')).status, 'active', 'the replay changed nothing');
    assert.deepEqual(
      (await auditActions(ws)).filter((a) => a.startsWith('user.')),
      ['user.created', 'user.deactivated', 'user.reactivated'],
    );
  });

  test('DELETE errors are replayed too (404 user_not_found, then the user appears)', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const first = await ctx.api(ws, 'DELETE', '/users/later@example.com', { headers: withKey(key) });
    assertProblem(first, 404, 'user_not_found');
    await ctx.api(ws, 'POST', '/users', { body: userBody('later@example.com') });
    const retry = await ctx.api(ws, 'DELETE', '/users/later@example.com', { headers: withKey(key) });
    assertReplayOf(retry, first);
    assert.equal(json<'getUser'>(await ctx.api(ws, 'GET', '/users/later@example.com')).status, 'active');
  });

  test('a key longer than 255 characters → 400 problem, nothing created; 255 is accepted', async () => {
    const ws = await ctx.createWorkspace('idem');
    const long = await ctx.api(ws, 'POST', '/users', { body: userBody('long@example.com'), headers: withKey('k'.repeat(256)) });
    assert.equal(long.statusCode, 400, long.body);
    assert.match(long.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(long).status, 400);
    assertProblem(await ctx.api(ws, 'GET', '/users/long@example.com'), 404, 'user_not_found');
    const longDelete = await ctx.api(ws, 'DELETE', '/users/long@example.com', { headers: withKey('k'.repeat(300)) });
    assert.equal(longDelete.statusCode, 400, longDelete.body);

    const max = 'm'.repeat(255);
    const ok = await ctx.api(ws, 'POST', '/users', { body: userBody('max@example.com'), headers: withKey(max) });
    assert.equal(ok.statusCode, 201, ok.body);
    const replay = await ctx.api(ws, 'POST', '/users', { body: userBody('max@example.com'), headers: withKey(max) });
    assertReplayOf(replay, ok);
  });

  test('keys are scoped per workspace: the same key in two workspaces is two requests', async () => {
    const a = await ctx.createWorkspace('idem-a');
    const b = await ctx.createWorkspace('idem-b');
    const key = newKey();
    const body = userBody('shared@example.com');
    const inA = await ctx.api(a, 'POST', '/users', { body, headers: withKey(key) });
    const inB = await ctx.api(b, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(inA.statusCode, 201);
    assert.equal(inB.statusCode, 201);
    assert.equal(inB.headers['idempotent-replayed'], undefined);
    assert.equal(await totalUsers(a), 1);
    assert.equal(await totalUsers(b), 1);

    const other = await ctx.api(b, 'POST', '/users', { body: userBody('other@example.com'), headers: withKey(newKey()) });
    assert.equal(other.statusCode, 201);
    const key2 = newKey();
    await ctx.api(a, 'POST', '/users', { body: userBody('x@example.com'), headers: withKey(key2) });
    const differentBodyInB = await ctx.api(b, 'POST', '/users', { body: userBody('y@example.com'), headers: withKey(key2) });
    assert.equal(differentBodyInB.statusCode, 201, "a's use of the key does not bind it in b");
  });

  test('keys belong to the workspace, not to one API key: a retry with another key of it is replayed', async () => {
    const ws = await ctx.createWorkspace('idem');
    const second = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`));
    const key = newKey();
    const body = userBody('rotated@example.com');
    const first = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(first.statusCode, 201);
    const retry = await ctx.api({ ...ws, apiKey: second.key }, 'POST', '/users', { body, headers: withKey(key) });
    assertReplayOf(retry, first);
    assert.equal(await totalUsers(ws), 1);
  });

  test('an invalid request (400) claims no key: a later valid request with it runs', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const invalid = await ctx.api(ws, 'POST', '/users', { body: { user: { email: 'bad' } }, headers: withKey(key) });
    assertProblem(invalid, 400, 'validation_failed');
    const malformed = await ctx.api(ws, 'POST', '/users', {
      body: '{"user": ',
      headers: withKey(key, { 'content-type': 'application/json' }),
    });
    assertProblem(malformed, 400, 'malformed_json');
    const valid = await ctx.api(ws, 'POST', '/users', { body: userBody('valid@example.com'), headers: withKey(key) });
    assert.equal(valid.statusCode, 201, valid.body);
    assert.equal(valid.headers['idempotent-replayed'], undefined);
  });

  test('a request with an unknown API key claims no key in the workspace', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const body = userBody('auth@example.com');
    assertProblem(await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key, { 'x-api-key': 'wum_unknown' }) }), 401, 'invalid_api_key');
    const real = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(real.statusCode, 201);
    assert.equal(real.headers['idempotent-replayed'], undefined);
  });

  test('while the first request is in flight → 409 idempotency_key_in_use; a different request → 422', async () => {
    const ws = await ctx.createWorkspace('idem');
    const id = await workspaceId(ws);
    const body = userBody('flight@example.com');

    // Learn the fingerprint the service computes for this request from a completed run of it.
    const probeKey = newKey();
    const probe = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(probeKey) });
    assert.equal(probe.statusCode, 201);
    const [row] = await ctx.database.db
      .select({ fingerprint: idempotencyKeys.fingerprint })
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.workspaceId, id), eq(idempotencyKeys.key, probeKey)));
    assert.ok(row, 'the completed request left its record');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/flight@example.com')).statusCode, 204);

    // Another process has claimed a second key for the same request and not answered yet.
    const key = newKey();
    const store = createIdempotencyStore(ctx.database.db);
    assert.deepEqual(await store.begin(id, key, row.fingerprint, 60), { state: 'started' });

    const inFlight = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertProblem(inFlight, 409, 'idempotency_key_in_use');
    assert.equal(inFlight.headers['idempotent-replayed'], undefined);
    assert.equal(json<'getUser'>(await ctx.api(ws, 'GET', '/users/flight@example.com')).status, 'deactivated', 'it did not run');

    const other = await ctx.api(ws, 'POST', '/users', { body: userBody('else@example.com'), headers: withKey(key) });
    assertProblem(other, 422, 'idempotency_key_reused');

    // The first request finishes: retries now get its response.
    await store.complete(id, key, {
      status: 201,
      headers: { 'content-type': probe.headers['content-type'] as string },
      body: probe.body,
    });
    const after = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(after.statusCode, 201);
    assert.equal(after.headers['idempotent-replayed'], 'true');
    assert.equal(after.body, probe.body);
  });

  test('a claim abandoned by a crashed process is taken over by a retry of the same request', async () => {
    const ws = await ctx.createWorkspace('idem');
    const id = await workspaceId(ws);
    const body = userBody('crashed@example.com');
    const probeKey = newKey();
    assert.equal((await ctx.api(ws, 'POST', '/users', { body, headers: withKey(probeKey) })).statusCode, 201);
    const [row] = await ctx.database.db
      .select({ fingerprint: idempotencyKeys.fingerprint })
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.workspaceId, id), eq(idempotencyKeys.key, probeKey)));
    assert.equal((await ctx.api(ws, 'DELETE', '/users/crashed@example.com')).statusCode, 204);

    // A claim whose lock has already run out, and that never got a response.
    const key = newKey();
    await createIdempotencyStore(ctx.database.db).begin(id, key, row!.fingerprint, 0);
    const retry = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(json<'addUser'>(retry).status, 'active', 'the request ran (and reactivated the user)');
  });

  test('after 24 hours a key is forgotten: the request runs again', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const body = userBody('daily@example.com');
    const first = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(first.statusCode, 201);
    const young = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assert.equal(young.headers['idempotent-replayed'], 'true');

    await ctx.database.db
      .update(idempotencyKeys)
      .set({ createdAt: sql`now() - interval '25 hours'` })
      .where(and(eq(idempotencyKeys.workspaceId, await workspaceId(ws)), eq(idempotencyKeys.key, key)));
    const old = await ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) });
    assertProblem(old, 409, 'user_already_exists');
    assert.equal(old.headers['idempotent-replayed'], undefined, 'run again, not replayed');
    const differentBody = await ctx.api(ws, 'POST', '/users', { body: userBody('other@example.com'), headers: withKey(key) });
    assertProblem(differentBody, 422, 'idempotency_key_reused');
  });

  test('a claim by another request fingerprint in flight → 422 idempotency_key_reused', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    await createIdempotencyStore(ctx.database.db).begin(await workspaceId(ws), key, 'some-other-request', 60);
    const res = await ctx.api(ws, 'POST', '/users', { body: userBody('fp@example.com'), headers: withKey(key) });
    assertProblem(res, 422, 'idempotency_key_reused');
    assertProblem(await ctx.api(ws, 'GET', '/users/fp@example.com'), 404, 'user_not_found');
  });

  test('two identical requests at once: one runs, the other is replayed or told the key is in use', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const body = userBody('twin@example.com');
    const responses = await Promise.all([1, 2].map(() => ctx.api(ws, 'POST', '/users', { body, headers: withKey(key) })));
    const fresh = responses.filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined);
    assert.equal(fresh.length, 1, responses.map((r) => `${r.statusCode} ${r.body}`).join('\n'));
    const other = responses.find((r) => r !== fresh[0])!;
    if (other.statusCode === 201) {
      assertReplayOf(other, fresh[0]!);
    } else {
      assertProblem(other, 409, 'idempotency_key_in_use');
    }
    assert.equal(await totalUsers(ws), 1);
  });

  test('Idempotency-Key is ignored on reads', async () => {
    const ws = await ctx.createWorkspace('idem');
    const key = newKey();
    const first = await ctx.api(ws, 'GET', '/users', { headers: withKey(key) });
    assert.equal(first.statusCode, 200);
    await ctx.api(ws, 'POST', '/users', { body: userBody('read@example.com') });
    const second = await ctx.api(ws, 'GET', '/users', { headers: withKey(key) });
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.equal(json<'listUsers'>(second).total_count, 1);
  });
});
