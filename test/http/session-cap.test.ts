import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { authenticateOperatorSession, openOperatorSession } from '../../src/core/sessions/operator-sessions.ts';
import { hashSessionId, openPersonSession } from '../../src/core/sessions/sessions-service.ts';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Live console sessions are capped per key, per person and per operator
 * (SESSIONS_PER_PRINCIPAL_MAX, 10 by default): opening one more ends the oldest, whose cookie is
 * then refused (docs/security.md, "Hardening controls").
 */
describe(`console sessions are capped per key and per person [${BACKEND}]`, () => {
  let ctx: TestContext;
  const lifetime = { idleMs: 3_600_000, maxMs: 3_600_000, maxPerPrincipal: 10 };

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  /** Opens a key session of `ws`'s key on `app`; resolves with its `name=value` cookie. */
  async function signIn(ws: TestWorkspace, app: FastifyInstance = ctx.app, apiKey = ws.apiKey): Promise<string> {
    const res = await app.inject({ method: 'POST', url: `${API}/console/session`, headers: { host: ws.host, 'x-api-key': apiKey, origin: `http://${ws.host}` } });
    assert.equal(res.statusCode, 201, res.body);
    return (res.headers['set-cookie'] as string).split(';', 1)[0]!;
  }

  const withCookie = (ws: TestWorkspace, cookie: string): Promise<LightMyRequestResponse> =>
    ctx.app.inject({ method: 'GET', url: `${API}/users`, headers: { host: ws.host, cookie } });

  test('the 11th session of one key ends the oldest (its cookie → 401 invalid_session); the ten newest and another key\'s stay', async () => {
    const ws = await ctx.createWorkspace('cap');
    const created = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, { name: 'second' });
    assert.equal(created.statusCode, 201, created.body);
    const otherKeyCookie = await signIn(ws, ctx.app, json<'createApiKey'>(created).key);
    const cookies: string[] = [];
    for (let i = 0; i < 11; i += 1) cookies.push(await signIn(ws));
    const oldest = await withCookie(ws, cookies[0]!);
    assert.equal(oldest.statusCode, 401, oldest.body);
    assert.equal(json<'Problem'>(oldest).code, 'invalid_session');
    for (const [i, cookie] of cookies.slice(1).entries()) assert.equal((await withCookie(ws, cookie)).statusCode, 200, `session ${i + 2}`);
    assert.equal((await withCookie(ws, otherKeyCookie)).statusCode, 200, 'another key\'s session is not counted with these');
    // One more ends the next oldest.
    await signIn(ws);
    assert.equal((await withCookie(ws, cookies[1]!)).statusCode, 401);
    assert.equal((await withCookie(ws, cookies[2]!)).statusCode, 200);
  });

  test('SESSIONS_PER_PRINCIPAL_MAX sets the cap; 0 removes it', async () => {
    const ws = await ctx.createWorkspace('cap-set');
    const two = await ctx.buildApp({ SESSIONS_PER_PRINCIPAL_MAX: '2' });
    const first = await signIn(ws, two);
    const second = await signIn(ws, two);
    await signIn(ws, two);
    assert.equal((await withCookie(ws, first)).statusCode, 401);
    assert.equal((await withCookie(ws, second)).statusCode, 200);

    const uncapped = await ctx.buildApp({ SESSIONS_PER_PRINCIPAL_MAX: '0' });
    const cookies: string[] = [];
    for (let i = 0; i < 12; i += 1) cookies.push(await signIn(ws, uncapped));
    for (const cookie of cookies) assert.equal((await withCookie(ws, cookie)).statusCode, 200);
  });

  test('a person\'s 11th session ends their oldest; another person\'s stay', async () => {
    const ws = await ctx.createWorkspace('cap-person');
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    const people = [];
    for (const email of ['olivia@example.com', 'oscar@example.com']) {
      assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(email, { role: 'owner' }) })).statusCode, 201);
      people.push((await ctx.store.identityProviders.findActiveOwner(workspace.id, email))!);
    }
    const [olivia, oscar] = people as [NonNullable<(typeof people)[0]>, NonNullable<(typeof people)[0]>];
    const revision = randomUUID();
    const open = (person: typeof olivia) => openPersonSession(ctx.store, workspace, { userId: person.id, publicId: person.publicId, email: person.email }, revision, lifetime);
    const oscarSession = await open(oscar);
    const sessions = [];
    for (let i = 0; i < 11; i += 1) sessions.push(await open(olivia));
    const resolve = (id: string) => ctx.store.sessions.resolve(ws.subdomain, hashSessionId(id));
    // The oldest is ended in the store; the rest are live.
    assert.ok((await resolve(sessions[0]!.id)).session?.endedAt, 'the oldest is ended');
    for (const session of sessions.slice(1)) assert.equal((await resolve(session.id)).session?.endedAt, null);
    assert.equal((await resolve(oscarSession.id)).session?.endedAt, null, 'another person\'s session stays');
  });

  test('an operator\'s 11th session ends their oldest (any case of the email); another operator\'s stay', async () => {
    const policy = { issuer: 'https://login.example.com', emails: new Set(['ada@example.com', 'grace@example.com']) };
    const grace = await openOperatorSession(ctx.store, policy, { type: 'operator', id: 'oidc:grace', label: 'grace@example.com' }, lifetime);
    const sessions = [];
    for (let i = 0; i < 11; i += 1) {
      sessions.push(await openOperatorSession(ctx.store, policy, { type: 'operator', id: 'oidc:ada', label: i % 2 ? 'Ada@Example.com' : 'ada@example.com' }, lifetime));
    }
    await assert.rejects(authenticateOperatorSession(ctx.store, policy, sessions[0]!.id, lifetime), { code: 'invalid_session' });
    for (const session of sessions.slice(1)) await authenticateOperatorSession(ctx.store, policy, session.id, lifetime);
    await authenticateOperatorSession(ctx.store, policy, grace.id, lifetime);
  });
});
