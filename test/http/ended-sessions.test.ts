import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { openPersonSession } from '../../src/core/sessions/sessions-service.ts';
import { SCIM_PATCH_OP as PATCH_OP, SCIM_USER as USER, SCIM_WUM as WUM, scimRequest } from '../helpers/scim-request.ts';
import { startOpenIdProvider } from '../helpers/oidc-provider.ts';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { testClock } from '../helpers/test-clock.ts';
import { json } from '../helpers/json.ts';

const IDP = { issuer: 'http://127.0.0.1:9/issuer', clientId: 'wum-console', clientSecret: 'very-secret-value' };

/*
 * Ended sessions never come back (docs/security.md, "Console sessions"): a person's session ends
 * for good when they are deactivated (by any route), demoted, deleted through SCIM or renamed, so
 * that re-enabling them later needs a new sign-in; a key's session ends when its key is revoked or
 * expires, and when the workspace enrols an identity provider.
 */
describe(`ended console sessions stay ended [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    // The test provider is plain http on loopback, which the outbound guard allows only with WEBHOOK_ALLOW_HTTP.
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  /** A workspace with an identity provider and two active owners (so either may be removed). */
  async function ownersWorkspace(prefix: string): Promise<TestWorkspace> {
    const ws = await ctx.createWorkspace(prefix);
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    await ctx.store.identityProviders.put(workspace.id, IDP);
    for (const email of ['ada@example.com', 'bob@example.com']) {
      const res = await ctx.api(ws, 'POST', '/users', { body: userBody(email, { role: 'owner' }) });
      assert.equal(res.statusCode, 201, res.body);
    }
    return ws;
  }

  /**
   * The cookie of a session of `email` as the workspace's identity-provider sign-in opens it
   * (the provider's side of the sign-in is test/console/oidc-sign-in.test.ts's).
   */
  async function personCookie(ws: TestWorkspace, email: string): Promise<string> {
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    const user = (await ctx.store.users.find(workspace.id, { email }))!;
    const { revision } = (await ctx.store.identityProviders.find(workspace.id))!;
    const opened = await openPersonSession(ctx.store, workspace, { userId: user.rowId, publicId: user.id, email: user.email }, revision, ctx.config.sessions);
    return `wum_session=${opened.id}`;
  }

  function withCookie(ws: TestWorkspace, cookie: string, path = '/users', app = ctx.app): Promise<LightMyRequestResponse> {
    return app.inject({ method: 'GET', url: `${API}${path}`, headers: { host: ws.host, cookie } });
  }

  async function assertOpen(ws: TestWorkspace, cookie: string, why: string, app = ctx.app): Promise<void> {
    const res = await withCookie(ws, cookie, '/users', app);
    assert.equal(res.statusCode, 200, `${why}: ${res.body}`);
  }

  async function assertEnded(ws: TestWorkspace, cookie: string, why: string, app = ctx.app): Promise<void> {
    const res = await withCookie(ws, cookie, '/users', app);
    assert.equal(res.statusCode, 401, `${why}: ${res.body}`);
    assert.equal(json<'Problem'>(res).code, 'invalid_session', why);
  }

  const scim = (key: TestWorkspace, method: string, path: string, body?: unknown) => scimRequest(ctx.app, key, method, path, body);

  async function expectStatus(res: Promise<LightMyRequestResponse>, status: number): Promise<LightMyRequestResponse> {
    const answer = await res;
    assert.equal(answer.statusCode, status, answer.body);
    return answer;
  }

  /** The `ended_at` of every session of the workspace's user `email` (its stored state). */
  async function endedAtOf(ws: TestWorkspace, email: string): Promise<Array<string | null>> {
    const result = (await ctx.database.db.execute(sql`select cs.ended_at from console_sessions cs
      join workspaces w on w.id = cs.workspace_id join users u on u.workspace_id = cs.workspace_id and u.id = cs.user_id
      where w.subdomain = ${ws.subdomain} and lower(u.email) = lower(${email})`)) as unknown as { rows: Array<{ ended_at: string | null }> };
    return result.rows.map((r) => r.ended_at);
  }

  const ways: Array<{ name: string; end: (ws: TestWorkspace) => Promise<unknown>; undo: (ws: TestWorkspace) => Promise<unknown> }> = [
    {
      name: 'DELETE /users, then POST /users again',
      end: (ws) => expectStatus(ctx.api(ws, 'DELETE', '/users/ada@example.com'), 204),
      undo: (ws) => expectStatus(ctx.api(ws, 'POST', '/users', { body: userBody('ada@example.com', { role: 'owner' }) }), 201),
    },
    {
      name: 'PATCH status deactivated, then active',
      end: (ws) => expectStatus(ctx.api(ws, 'PATCH', '/users/ada@example.com', { body: { user: { status: 'deactivated' } } }), 200),
      undo: (ws) => expectStatus(ctx.api(ws, 'PATCH', '/users/ada@example.com', { body: { user: { status: 'active' } } }), 200),
    },
    {
      name: 'demoted to non_owner, then promoted again',
      end: (ws) => expectStatus(ctx.api(ws, 'PATCH', '/users/ada@example.com', { body: { user: { role: 'non_owner' } } }), 200),
      undo: (ws) => expectStatus(ctx.api(ws, 'PATCH', '/users/ada@example.com', { body: { user: { role: 'owner' } } }), 200),
    },
    {
      name: 'email changed, then changed back',
      end: (ws) => expectStatus(ctx.api(ws, 'PATCH', '/users/ada@example.com', { body: { user: { email: 'someone.else@example.com' } } }), 200),
      undo: (ws) => expectStatus(ctx.api(ws, 'PATCH', '/users/someone.else@example.com', { body: { user: { email: 'ada@example.com' } } }), 200),
    },
    {
      name: 'SCIM PATCH active false, then true',
      end: async (ws) => {
        const id = json<'getUser'>(await ctx.api(ws, 'GET', '/users/ada@example.com')).id;
        return expectStatus(scim(ws, 'PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] }), 200);
      },
      undo: async (ws) => {
        const id = json<'getUser'>(await ctx.api(ws, 'GET', '/users/ada@example.com')).id;
        return expectStatus(scim(ws, 'PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] }), 200);
      },
    },
    {
      name: 'SCIM DELETE, then a SCIM re-create (the same user id)',
      end: async (ws) => {
        const id = json<'getUser'>(await ctx.api(ws, 'GET', '/users/ada@example.com')).id;
        return expectStatus(scim(ws, 'DELETE', `/Users/${id}`), 204);
      },
      undo: async (ws) => {
        const id = json<'getUser'>(await ctx.api(ws, 'GET', '/users/ada@example.com')).id;
        const res = await expectStatus(scim(ws, 'POST', '/Users', { schemas: [USER], userName: 'ada@example.com', [WUM]: { workspaceRole: 'owner' } }), 201);
        assert.equal(json<{ id: string }>(res).id, id, 'the re-created user has its former id');
      },
    },
  ];

  for (const way of ways) {
    test(`an owner's session ends for good: ${way.name} leaves the old cookie 401; a new sign-in works`, async () => {
      const ws = await ownersWorkspace('ended');
      const cookie = await personCookie(ws, 'ada@example.com');
      const other = await personCookie(ws, 'bob@example.com');
      await assertOpen(ws, cookie, 'before');
      await way.end(ws);
      await assertEnded(ws, cookie, 'after the end');
      await way.undo(ws);
      await assertEnded(ws, cookie, 'after the person is back, the old cookie still');
      assert.ok((await endedAtOf(ws, 'ada@example.com')).every((at) => at !== null), 'the stored session is ended, not suspended');
      await assertOpen(ws, other, "another owner's session is untouched");
      await assertOpen(ws, await personCookie(ws, 'ada@example.com'), 'a new sign-in');
    });
  }

  test("a change that leaves an owner an active owner with the same email (names, apps) keeps the owner's session", async () => {
    const ws = await ownersWorkspace('kept');
    const cookie = await personCookie(ws, 'ada@example.com');
    await expectStatus(ctx.api(ws, 'PATCH', '/users/ada@example.com', { body: { user: { first_name: 'Ada', apps: [{ name: 'crm', role: 'admin' }] } } }), 200);
    await assertOpen(ws, cookie, 'after a change of names and apps');
  });

  /** The cookie of the key sign-in of `ws`'s key. */
  async function keyCookie(ws: TestWorkspace): Promise<string> {
    const res = await ctx.app.inject({
      method: 'POST',
      url: `${API}/console/session`,
      headers: { host: ws.host, 'x-api-key': ws.apiKey, origin: `http://${ws.host}` },
    });
    assert.equal(res.statusCode, 201, res.body);
    return (res.headers['set-cookie'] as string).split(';', 1)[0]!;
  }

  async function keyFor(ws: TestWorkspace, body: unknown): Promise<TestWorkspace> {
    const res = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, body);
    assert.equal(res.statusCode, 201, res.body);
    return { ...ws, apiKey: json<'createApiKey'>(res).key, apiKeyId: json<'createApiKey'>(res).id };
  }

  /** The `ended_at` of every session opened with key `keyId`. */
  async function keySessionsEndedAt(keyId: string): Promise<Array<string | null>> {
    const result = (await ctx.database.db.execute(sql`select ended_at from console_sessions where api_key_id = ${keyId}`)) as unknown as {
      rows: Array<{ ended_at: string | null }>;
    };
    return result.rows.map((r) => r.ended_at);
  }

  test("revoking a key ends its sessions for good (stored as ended); another key's session is untouched", async () => {
    const ws = await ctx.createWorkspace('ended-key');
    const reader = await keyFor(ws, { name: 'console', scopes: ['users:read'] });
    const cookie = await keyCookie(reader);
    const other = await keyCookie(ws);
    await assertOpen(ws, cookie, 'before');
    await expectStatus(ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${reader.apiKeyId}`), 204);
    await assertEnded(ws, cookie, 'after the revocation');
    assert.deepEqual((await keySessionsEndedAt(reader.apiKeyId)).map((at) => at !== null), [true], 'ended in the database');
    await assertOpen(ws, other, "the other key's session");
  });

  test("a key's session ends when the key expires", async () => {
    const ws = await ctx.createWorkspace('ended-expiry');
    // An app whose clock the test moves past the expiry instead of waiting for it.
    const clock = testClock();
    const app = await ctx.buildApp({}, clock.now);
    const soon = await keyFor(ws, { name: 'short-lived', expires_at: new Date(Date.now() + 60_000).toISOString() });
    const cookie = await keyCookie(soon);
    await assertOpen(ws, cookie, 'before the expiry', app);
    clock.advance(61_000);
    await assertEnded(ws, cookie, 'after the expiry', app);
  });

  test('enrolling an identity provider ends the sessions opened with keys, for good', async () => {
    const ws = await ctx.createWorkspace('ended-idp');
    const cookie = await keyCookie(ws);
    await assertOpen(ws, cookie, 'before the enrolment');
    // A real provider: the operator API discovers it before saving (docs/security.md, "Outbound connections").
    const op = await startOpenIdProvider(['http://127.0.0.1/console/oidc/callback']);
    const put = await ctx.admin('PUT', `/workspaces/${ws.subdomain}/identity-provider`, {
      issuer: op.issuer,
      client_id: op.clientId,
      client_secret: op.clientSecret,
    }).finally(() => op.close());
    assert.equal(put.statusCode, 201, put.body);
    await assertEnded(ws, cookie, 'after the enrolment');
    assert.deepEqual((await keySessionsEndedAt(ws.apiKeyId)).map((at) => at !== null), [true], 'ended in the database');
    await expectStatus(ctx.admin('DELETE', `/workspaces/${ws.subdomain}/identity-provider`), 204);
    await assertEnded(ws, cookie, 'after the provider is removed again');
  });
});
