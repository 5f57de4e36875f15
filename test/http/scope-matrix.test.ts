import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { API_KEY_SCOPES } from '../../src/core/api-keys/scopes.ts';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

type Method = NonNullable<InjectOptions['method']>;

interface Probe {
  readonly name: string;
  readonly scope: string;
  readonly method: Method;
  readonly url: string;
  readonly body?: unknown;
  readonly scim?: boolean;
}

/** A valid-looking request for an operation of the document: path parameters filled, a body where one is taken. */
function requestFor(method: string, path: string, serial: number): { url: string; body?: unknown } {
  // Ids no resource has: a request of the right scope gets its 404, never a 5xx.
  const url = path
    .replace('{email}', encodeURIComponent('member@example.com'))
    .replace('{id}', '00000000-0000-4000-8000-000000000000')
    .replace('{delivery_id}', '00000000-0000-4000-8000-000000000001');
  if (method === 'post') return { url, body: userBody(`new${serial}@example.com`) };
  if (method === 'patch') return { url, body: { user: { first_name: `Changed${serial}` } } };
  return { url };
}

/**
 * Every operation of the OpenAPI document, and the SCIM service, with a key of each scope:
 * the operation's scope → not refused (and never a 5xx); any other → `403 insufficient_scope`
 * with nothing changed. Source: docs/security.md, "API keys and scopes".
 */
describe(`scope matrix: every route with a key of each scope [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  const keys = new Map<string, TestWorkspace>();

  before(async () => {
    ctx = await createTestContext({ RATE_LIMIT_PER_KEY: '0' });
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('matrix');
    for (const email of ['owner@example.com', 'member@example.com']) {
      const res = await ctx.api(ws, 'POST', '/users', { body: userBody(email, email.startsWith('owner') ? { role: 'owner' } : {}) });
      assert.equal(res.statusCode, 201, res.body);
    }
    for (const scope of API_KEY_SCOPES) {
      const res = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, { name: `only-${scope}`, scopes: [scope] });
      assert.equal(res.statusCode, 201, res.body);
      keys.set(scope, { ...ws, apiKey: json<'createApiKey'>(res).key, apiKeyId: json<'createApiKey'>(res).id });
    }
  });
  after(() => ctx.close());

  /** What a refused request must leave alone: the users, the audit trail and the events feed. */
  async function state(): Promise<string> {
    const users = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'all', page_size: '100' } }));
    const audit = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`)).total_count;
    const events = json<'listEvents'>(await ctx.api(ws, 'GET', '/events', { query: { limit: '1000' } })).events.length;
    return JSON.stringify({ users, audit, events });
  }

  async function send(probe: Probe, key: TestWorkspace): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = { host: key.host };
    if (probe.scim) headers.authorization = `Bearer ${key.apiKey}`;
    else headers['x-api-key'] = key.apiKey;
    if (probe.body !== undefined) headers['content-type'] = probe.scim ? 'application/scim+json' : 'application/json';
    return ctx.app.inject({
      method: probe.method,
      url: probe.url,
      headers,
      ...(probe.body === undefined ? {} : { payload: JSON.stringify(probe.body) }),
    });
  }

  test('each operation of the document names exactly one scope; a key of it is served, every other key gets 403 and changes nothing', async () => {
    const document = json<{ paths: Record<string, Record<string, { operationId: string; security?: Array<Record<string, string[]>> }>> }>(await ctx.app.inject({ method: 'GET', url: `${API}/openapi.json` }));
    const probes: Probe[] = [];
    let serial = 0;
    for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, { operationId: string; security?: Array<Record<string, string[]>> }>>)) {
      if (!path.startsWith(API)) continue;
      for (const [method, operation] of Object.entries(methods)) {
        const scopes = (operation.security ?? []).flatMap((requirement) => requirement.apiKey ?? []);
        assert.equal(scopes.length, 1, `${operation.operationId} names one scope: ${JSON.stringify(operation.security)}`);
        serial += 1;
        probes.push({ name: operation.operationId, scope: scopes[0]!, method: method.toUpperCase() as Method, ...requestFor(method, path, serial) });
      }
    }
    assert.ok(probes.length >= 8, `${probes.length} operations`);
    probes.push(
      { name: 'scim list users', scope: 'scim', method: 'GET', url: '/scim/v2/Users', scim: true },
      { name: 'scim list groups', scope: 'scim', method: 'GET', url: '/scim/v2/Groups', scim: true },
      { name: 'scim discovery', scope: 'scim', method: 'GET', url: '/scim/v2/ServiceProviderConfig', scim: true },
      {
        name: 'scim add user',
        scope: 'scim',
        method: 'POST',
        url: '/scim/v2/Users',
        scim: true,
        body: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'scim-added@example.com' },
      },
    );

    // Refused requests first, while every user is still there to be (not) changed.
    for (const probe of probes) {
      for (const scope of API_KEY_SCOPES) {
        if (scope === probe.scope) continue;
        const before = await state();
        const res = await send(probe, keys.get(scope)!);
        assert.equal(res.statusCode, 403, `${probe.name} with ${scope}: ${res.body}`);
        assert.match(res.body, new RegExp(probe.scope), `${probe.name}: the problem names ${probe.scope}`);
        if (!probe.scim) assert.equal(json<'Problem'>(res).code, 'insufficient_scope');
        assert.equal(await state(), before, `${probe.name} with ${scope} changed nothing`);
      }
    }
    for (const probe of probes) {
      const res = await send(probe, keys.get(probe.scope)!);
      assert.ok(res.statusCode < 500, `${probe.name} with ${probe.scope}: ${res.statusCode} ${res.body}`);
      assert.notEqual(res.statusCode, 403, `${probe.name} with ${probe.scope}: ${res.body}`);
      assert.notEqual(res.statusCode, 401, `${probe.name} with ${probe.scope}: ${res.body}`);
    }
  });
});
