import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ScimError, type ScimGroup, type ScimList } from '../helpers/json.ts';

/*
 * Tenant isolation (docs/security.md; OWASP API1 "Broken Object Level Authorization", API2 "Broken
 * Authentication", API5 "Broken Function Level Authorization"): every endpoint and method of
 * the external API × (own key, another workspace's key, a revoked key, no key), every admin
 * endpoint × (right token, wrong token, none), and cross-workspace object access. Keys of the
 * wrong kind never work, and a refused request changes nothing anywhere.
 */

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
type Method = (typeof METHODS)[number];
type KeyKind = 'own' | 'other workspace' | 'revoked' | 'none';

/** What a request should get: a status, and for errors the code (HEAD answers have no body). */
interface Expected {
  readonly status: number;
  readonly code?: string;
}

const UNAUTHENTICATED: Record<Exclude<KeyKind, 'own'>, Expected> = {
  'other workspace': { status: 401, code: 'invalid_api_key' },
  revoked: { status: 401, code: 'invalid_api_key' },
  none: { status: 401, code: 'missing_api_key' },
};

function check(res: LightMyRequestResponse, expected: Expected, what: string): void {
  assert.equal(res.statusCode, expected.status, `${what}: ${res.body}`);
  if (expected.code === undefined) return;
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, what);
  if (res.body) assert.equal(json<'Problem'>(res).code, expected.code, what);
}

describe(`tenant isolation matrix [${BACKEND}]`, () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let mine: TestWorkspace;
  let theirs: TestWorkspace;
  let revokedKey: string;
  let counter = 0;

  /** Audit events and users of a workspace, read with the admin token. */
  async function snapshot(ws: TestWorkspace) {
    const events = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    const users = await ctx.api(ws, 'GET', '/users', { query: { status: 'all', page_size: '100' } });
    return { events: json<'listWorkspaceAuditEvents'>(events).audit_events as Array<{ action: string; actor_id: string | null }>, users: json<'listUsers'>(users).users };
  }

  function call(ws: TestWorkspace, method: Method, path: string, key: KeyKind): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = { host: ws.host };
    if (key === 'own') headers['x-api-key'] = ws.apiKey;
    if (key === 'other workspace') headers['x-api-key'] = theirs.apiKey;
    if (key === 'revoked') headers['x-api-key'] = revokedKey;
    counter += 1;
    const withBody = ['POST', 'PUT', 'PATCH'].includes(method);
    // A PATCH that changes something, but not the email the next methods name.
    const body = method === 'PATCH' ? { user: { first_name: `matrix-${counter}` } } : userBody(`matrix-${counter}@example.com`);
    const options: InjectOptions = {
      method,
      url: `${API}${path}`,
      headers,
      ...(withBody ? { payload: body } : {}),
    };
    return app.inject(options);
  }

  before(async () => {
    // Webhook endpoints point at the discard port of loopback (nothing runs a worker here).
    ctx = await createTestContext({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' });
    // Many wrong keys are sent on purpose; the per-address limit of failed keys has its own tests.
    app = await ctx.buildApp({ AUTH_FAILURE_LIMIT: '0' });
    await ctx.seedProducts();
    mine = await ctx.createWorkspace('mine');
    theirs = await ctx.createWorkspace('theirs');
    const created = await ctx.admin('POST', `/workspaces/${mine.subdomain}/api-keys`);
    revokedKey = json<'createApiKey'>(created).key;
    assert.equal((await ctx.admin('DELETE', `/workspaces/${mine.subdomain}/api-keys/${json<'createApiKey'>(created).id}`)).statusCode, 204);
    for (const ws of [mine, theirs]) {
      for (const email of ['target@example.com', 'resident@example.com']) {
        assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(email) })).statusCode, 201);
      }
    }
  });
  after(() => ctx.close());

  /** Own-key answers per endpoint and method (405 for methods the path does not serve). */
  const endpoints: Array<{ path: string; own: Partial<Record<Method, Expected>> }> = [
    { path: '/users', own: { GET: { status: 200 }, HEAD: { status: 200 }, POST: { status: 201 } } },
    {
      path: '/users/target@example.com',
      own: { GET: { status: 200 }, HEAD: { status: 200 }, PATCH: { status: 200 }, DELETE: { status: 204 } },
    },
    { path: '/products', own: { GET: { status: 200 }, HEAD: { status: 200 } } },
    { path: '/events', own: { GET: { status: 200 }, HEAD: { status: 200 } } },
  ];

  for (const { path, own } of endpoints) {
    test(`external ${path}: every method × (own key, other workspace's key, revoked key, no key)`, async () => {
      const before = { mine: await snapshot(mine), theirs: await snapshot(theirs) };
      let ownChanges = 0;
      for (const method of METHODS) {
        for (const key of ['other workspace', 'revoked', 'none'] as const) {
          check(await call(mine, method, path, key), UNAUTHENTICATED[key], `${method} ${path} with ${key} key`);
        }
        const expected = own[method] ?? { status: 405, code: 'method_not_allowed' };
        const res = await call(mine, method, path, 'own');
        check(res, expected, `${method} ${path} with own key`);
        if (expected.status === 405) assert.ok(res.headers.allow, 'Allow on 405');
        if (['POST', 'PATCH', 'DELETE'].includes(method) && expected.status < 300) ownChanges += 1;
      }
      const after = { mine: await snapshot(mine), theirs: await snapshot(theirs) };
      assert.deepEqual(after.theirs, before.theirs, 'the other workspace is untouched');
      assert.equal(after.mine.events.length, before.mine.events.length + ownChanges, 'only own-key requests changed anything');
      for (const event of after.mine.events.slice(before.mine.events.length)) {
        assert.equal(event.actor_id, mine.apiKeyId, 'each change is attributed to the own key');
      }
    });
  }

  test("a workspace's own key reaches only its own objects, whatever email it names (BOLA)", async () => {
    const beforeMine = await snapshot(mine);
    // theirs names mine's resident by email, on its own host with its own key.
    const res = await ctx.api(theirs, 'GET', '/users/resident@example.com');
    assert.equal(res.statusCode, 200);
    assert.equal(json<'User'>(res).email, 'resident@example.com');
    assert.equal((await ctx.api(theirs, 'DELETE', '/users/resident@example.com')).statusCode, 204);
    const mineResident = await ctx.api(mine, 'GET', '/users/resident@example.com');
    assert.equal(json<'User'>(mineResident).status, 'active', "deactivating theirs left mine's user active");
    assert.equal((await ctx.api(theirs, 'GET', '/users/only-mine@example.com')).statusCode, 404);
    assert.equal((await ctx.api(mine, 'POST', '/users', { body: userBody('only-mine@example.com') })).statusCode, 201);
    const invisible = await ctx.api(theirs, 'GET', '/users/only-mine@example.com');
    check(invisible, { status: 404, code: 'user_not_found' }, "mine's user seen from theirs");
    check(await ctx.api(theirs, 'DELETE', '/users/only-mine@example.com'), { status: 404, code: 'user_not_found' }, 'delete from theirs');
    const listing = await ctx.api(theirs, 'GET', '/users', { query: { status: 'all', page_size: '100' } });
    assert.ok(!json<'listUsers'>(listing).users.some((u: { email: string }) => u.email === 'only-mine@example.com'));
    const afterMine = await snapshot(mine);
    assert.equal(afterMine.events.length, beforeMine.events.length + 1, 'only the own add is in mine');
  });

  test('the admin token is not an API key, and an API key is not the admin token (BFLA)', async () => {
    const asKey = await app.inject({ url: `${API}/users`, headers: { host: mine.host, 'x-api-key': ADMIN_TOKEN } });
    check(asKey, { status: 401, code: 'invalid_api_key' }, 'admin token as X-Api-Key');
    const asBearer = await app.inject({ url: '/admin/v1/workspaces', headers: { authorization: `Bearer ${mine.apiKey}` } });
    check(asBearer, { status: 401, code: 'invalid_admin_token' }, 'API key as admin bearer');
    const bearerOnExternal = await app.inject({
      url: `${API}/users`,
      headers: { host: mine.host, authorization: `Bearer ${mine.apiKey}` },
    });
    check(bearerOnExternal, { status: 401, code: 'missing_api_key' }, 'API key as bearer on the external API');
  });

  describe('SCIM /scim/v2: every endpoint and method × (own key, other workspace\'s key, revoked key, no key, X-Api-Key)', () => {
    /** A SCIM call with the key as Bearer (or as X-Api-Key, which SCIM does not read). */
    function scim(ws: TestWorkspace, method: Method, path: string, key: KeyKind | 'x-api-key', body?: object) {
      const headers: Record<string, string> = { host: ws.host };
      const bearer = { own: ws.apiKey, 'other workspace': theirs.apiKey, revoked: revokedKey, none: undefined, 'x-api-key': undefined }[key];
      if (bearer) headers.authorization = `Bearer ${bearer}`;
      if (key === 'x-api-key') headers['x-api-key'] = ws.apiKey;
      const withBody = ['POST', 'PUT', 'PATCH'].includes(method);
      if (withBody) headers['content-type'] = 'application/scim+json';
      return app.inject({ method, url: `/scim/v2${path}`, headers, ...(withBody ? { payload: JSON.stringify(body ?? {}) } : {}) });
    }

    function checkScim(res: LightMyRequestResponse, status: number, what: string): void {
      assert.equal(res.statusCode, status, `${what}: ${res.body}`);
      if (status < 400) return;
      assert.match(String(res.headers['content-type']), /^application\/scim\+json/, what);
      if (res.body) {
        assert.deepEqual(json<ScimError>(res).schemas, ['urn:ietf:params:scim:api:messages:2.0:Error'], what);
        assert.equal(json<ScimError>(res).status, String(status), what);
      }
    }

    let mineUserId: string;
    let theirsUserId: string;
    let mineGroupId: string;

    before(async () => {
      const find = async (ws: TestWorkspace) =>
        json<ScimList>(await scim(ws, 'GET', `/Users?filter=${encodeURIComponent('userName eq "resident@example.com"')}`, 'own')).Resources[0]!.id as string;
      mineUserId = await find(mine);
      theirsUserId = await find(theirs);
      const group = await scim(mine, 'POST', '/Groups', 'own', { displayName: 'crm:admin' });
      assert.equal(group.statusCode, 201, group.body);
      mineGroupId = json<ScimGroup>(group).id;
    });

    const scimEndpoints: Array<{ path: () => string; own: Partial<Record<Method, number>>; body?: () => object }> = [
      { path: () => '/ServiceProviderConfig', own: { GET: 200, HEAD: 200 } },
      { path: () => '/ResourceTypes', own: { GET: 200, HEAD: 200 } },
      { path: () => '/Schemas', own: { GET: 200, HEAD: 200 } },
      {
        path: () => '/Users',
        own: { GET: 200, HEAD: 200, POST: 201 },
        body: () => ({ userName: `scim-matrix-${(counter += 1)}@example.com` }),
      },
      {
        path: () => `/Users/${mineUserId}`,
        own: { GET: 200, HEAD: 200, PUT: 200, PATCH: 200, DELETE: 204 },
        body: () => ({ userName: 'resident@example.com', title: `t${(counter += 1)}`, Operations: [{ op: 'replace', path: 'title', value: `p${(counter += 1)}` }] }),
      },
      { path: () => '/Groups', own: { GET: 200, HEAD: 200, POST: 400 }, body: () => ({ displayName: 'not-a-role' }) },
      {
        path: () => `/Groups/${mineGroupId}`,
        own: { GET: 200, HEAD: 200, PUT: 200, PATCH: 204, DELETE: 204 },
        body: () => ({ displayName: 'crm:admin', Operations: [{ op: 'add', path: 'members', value: [{ value: mineUserId }] }] }),
      },
    ];

    for (const endpoint of scimEndpoints) {
      test(`/scim/v2${endpoint.path().replace(/[0-9a-f-]{36}|undefined/, '{id}')}`, async () => {
        const path = endpoint.path();
        const before = { mine: await snapshot(mine), theirs: await snapshot(theirs) };
        let ownChanges = 0;
        for (const method of METHODS) {
          for (const key of ['other workspace', 'revoked', 'none', 'x-api-key'] as const) {
            checkScim(await scim(mine, method, path, key, endpoint.body?.()), 401, `${method} ${path} with ${key}`);
          }
          // DELETE last: it ends the resource.
          if (method === 'DELETE') continue;
          const status = endpoint.own[method] ?? 405;
          const res = await scim(mine, method, path, 'own', endpoint.body?.());
          checkScim(res, status, `${method} ${path} with own key`);
          if (status === 405) assert.ok(res.headers.allow, 'Allow on 405');
        }
        if (endpoint.own.DELETE) checkScim(await scim(mine, 'DELETE', path, 'own'), 204, `DELETE ${path}`);
        else checkScim(await scim(mine, 'DELETE', path, 'own'), 405, `DELETE ${path}`);
        for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
          if ((endpoint.own[method] ?? 405) < 300 && (method !== 'PATCH' || !path.startsWith('/Groups'))) ownChanges += 1;
        }
        const after = { mine: await snapshot(mine), theirs: await snapshot(theirs) };
        assert.deepEqual(after.theirs, before.theirs, 'the other workspace is untouched');
        for (const event of after.mine.events.slice(before.mine.events.length)) {
          assert.equal(event.actor_id, mine.apiKeyId, 'each change is attributed to the own key');
        }
        if (!path.startsWith('/Groups')) assert.equal(after.mine.events.length, before.mine.events.length + ownChanges, 'only own-key requests changed anything');
      });
    }

    test("a workspace's key reaches only its own users and groups by id (BOLA)", async () => {
      const before = await snapshot(mine);
      for (const [method, body] of [
        ['GET', undefined],
        ['PUT', { userName: 'x@example.com', displayName: 'crm:admin' }],
        ['PATCH', { Operations: [{ op: 'replace', path: 'externalId', value: 'x' }] }],
        ['DELETE', undefined],
      ] as const) {
        checkScim(await scim(theirs, method, `/Users/${mineUserId}`, 'own', body), 404, `${method} mine's user from theirs`);
        checkScim(await scim(theirs, method, `/Groups/${mineGroupId}`, 'own', body), 404, `${method} mine's group from theirs`);
      }
      const listing = await scim(theirs, 'GET', `/Users?filter=${encodeURIComponent(`id eq "${mineUserId}"`)}`, 'own');
      assert.equal(json<ScimList>(listing).totalResults, 0);
      const groups = await scim(theirs, 'GET', '/Groups', 'own');
      assert.ok(!groups.body.includes(mineGroupId));
      // Adding mine's user as a member of a group of theirs grants nothing to anyone.
      const theirsGroup = await scim(theirs, 'POST', '/Groups', 'own', { displayName: 'crm:member', members: [{ value: mineUserId }] });
      assert.equal(theirsGroup.statusCode, 201);
      const members = json<ScimGroup>(theirsGroup).members!.map((m: { value: string }) => m.value);
      assert.ok(members.includes(theirsUserId) && !members.includes(mineUserId), `members of theirs only: ${members}`);
      assert.deepEqual(await snapshot(mine), before, 'mine is untouched');
    });
  });

  describe('admin endpoints × (right token, wrong token, no token)', () => {
    const wrongTokens = [
      { name: 'wrong token', authorization: `Bearer ${ADMIN_TOKEN}x` },
      { name: 'token prefix', authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` },
      { name: 'not Bearer', authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
      { name: 'no token', authorization: undefined },
    ];

    /** Every admin route with the answer to the right token; `path` is built when the test runs. */
    const routes: Array<{ method: Method; label: string; path: () => string; body?: object; ok: number }> = [
      { method: 'POST', label: '/workspaces', path: () => '/workspaces', body: { subdomain: `adm-${process.pid}` }, ok: 201 },
      { method: 'GET', label: '/workspaces', path: () => '/workspaces', ok: 200 },
      { method: 'GET', label: '/workspaces/{subdomain}', path: () => `/workspaces/${mine.subdomain}`, ok: 200 },
      { method: 'POST', label: '/workspaces/{subdomain}/api-keys', path: () => `/workspaces/${mine.subdomain}/api-keys`, ok: 201 },
      { method: 'GET', label: '/workspaces/{subdomain}/api-keys', path: () => `/workspaces/${mine.subdomain}/api-keys`, ok: 200 },
      {
        method: 'DELETE',
        label: '/workspaces/{subdomain}/api-keys/{id}',
        path: () => `/workspaces/${mine.subdomain}/api-keys/${revokedKeyId}`,
        ok: 204,
      },
      {
        method: 'GET',
        label: '/workspaces/{subdomain}/audit-events',
        path: () => `/workspaces/${mine.subdomain}/audit-events`,
        ok: 200,
      },
      { method: 'GET', label: '/audit-events', path: () => '/audit-events', ok: 200 },
      { method: 'GET', label: '/products', path: () => '/products', ok: 200 },
      { method: 'PUT', label: '/products/{name}', path: () => '/products/isolation-check', body: { roles: ['viewer'] }, ok: 201 },
      { method: 'GET', label: '/products/{name}', path: () => '/products/isolation-check', ok: 200 },
      { method: 'DELETE', label: '/products/{name}', path: () => '/products/isolation-check', ok: 204 },
      ...webhookRoutes(),
      ...policyRoutes(),
      { method: 'DELETE', label: '/workspaces/{subdomain}', path: () => `/workspaces/${doomed}`, ok: 204 },
      { method: 'PATCH', label: '/workspaces (unserved method)', path: () => '/workspaces', body: {}, ok: 405 },
    ];
    let revokedKeyId: string;
    let doomed: string;
    let endpointId: string;
    let deliveryId: string;

    /** The webhook endpoint routes, on an endpoint of `mine` with one delivery; deleted last. */
    function webhookRoutes(): typeof routes {
      const base = '/workspaces/{subdomain}/webhook-endpoints';
      const at = (rest = '') => () => `/workspaces/${mine.subdomain}/webhook-endpoints${rest}`;
      return [
        { method: 'POST', label: base, path: at(), body: { url: 'https://127.0.0.1:9/hook' }, ok: 201 },
        { method: 'GET', label: base, path: at(), ok: 200 },
        { method: 'GET', label: `${base}/{id}`, path: () => at(`/${endpointId}`)(), ok: 200 },
        { method: 'PATCH', label: `${base}/{id}`, path: () => at(`/${endpointId}`)(), body: { description: 'checked' }, ok: 200 },
        { method: 'POST', label: `${base}/{id}/rotate-secret`, path: () => at(`/${endpointId}/rotate-secret`)(), ok: 200 },
        { method: 'GET', label: `${base}/{id}/deliveries`, path: () => at(`/${endpointId}/deliveries`)(), ok: 200 },
        {
          method: 'POST',
          label: `${base}/{id}/deliveries/{delivery_id}/redeliver`,
          path: () => at(`/${endpointId}/deliveries/${deliveryId}/redeliver`)(),
          ok: 202,
        },
        { method: 'DELETE', label: `${base}/{id}`, path: () => at(`/${endpointId}`)(), ok: 204 },
      ];
    }

    /** The workspace's access policies, as the operator reaches them: set, read, removed last. */
    function policyRoutes(): typeof routes {
      const base = '/workspaces/{subdomain}/policies';
      const at = (rest: string) => () => `/workspaces/${mine.subdomain}/policies${rest}`;
      return [
        { method: 'PUT', label: `${base}/inactivity`, path: at('/inactivity'), body: { deactivate_after: 'P90D', applies_to: 'non_owners' }, ok: 200 },
        { method: 'GET', label: `${base}/inactivity`, path: at('/inactivity'), ok: 200 },
        { method: 'PUT', label: `${base}/expiry`, path: at('/expiry'), body: { warn_before: 'P7D' }, ok: 200 },
        { method: 'GET', label: `${base}/expiry`, path: at('/expiry'), ok: 200 },
        { method: 'DELETE', label: `${base}/inactivity`, path: at('/inactivity'), ok: 204 },
      ];
    }

    before(async () => {
      const endpoint = await ctx.admin('POST', `/workspaces/${mine.subdomain}/webhook-endpoints`, { url: 'https://127.0.0.1:9/hook' });
      assert.equal(endpoint.statusCode, 201, endpoint.body);
      endpointId = json<'createWebhookEndpoint'>(endpoint).id;
      const added = await ctx.api(mine, 'POST', '/users', { body: userBody(`hooked-${process.pid}@example.com`) });
      assert.equal(added.statusCode, 201, added.body);
      const deliveries = await ctx.admin('GET', `/workspaces/${mine.subdomain}/webhook-endpoints/${endpointId}/deliveries`);
      assert.equal(deliveries.statusCode, 200, deliveries.body);
      deliveryId = json<'listWebhookDeliveries'>(deliveries).deliveries[0]!.id;
      const keys = await ctx.admin('GET', `/workspaces/${mine.subdomain}/api-keys`);
      revokedKeyId = json<'listApiKeys'>(keys).api_keys.find((k: { revoked_at: string | null }) => k.revoked_at !== null)!.id;
      doomed = (await ctx.createWorkspace('doomed')).subdomain;
    });

    for (const route of routes) {
      test(`admin ${route.method} ${route.label}: right token, wrong token, no token`, async () => {
        const url = `/admin/v1${route.path()}`;
        const countEvents = async () => json<'listAuditEvents'>(await ctx.admin('GET', '/audit-events?page_size=1')).total_count;
        const before = JSON.stringify(await countEvents());
        for (const { name, authorization } of wrongTokens) {
          const res = await app.inject({
            method: route.method,
            url,
            headers: authorization ? { authorization } : {},
            ...(route.body ? { payload: route.body } : {}),
          });
          check(res, { status: 401, code: 'invalid_admin_token' }, `${route.method} ${url} with ${name}`);
          assert.match(String(res.headers['www-authenticate']), /^Bearer/);
        }
        assert.equal(JSON.stringify(await countEvents()), before, 'refused admin calls changed nothing');
        const res = await app.inject({
          method: route.method,
          url,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          ...(route.body ? { payload: route.body } : {}),
        });
        assert.equal(res.statusCode, route.ok, `${route.method} ${url} with the right token: ${res.body}`);
      });
    }
  });
});
