import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, BACKEND, createTestContext, userBody, type TestContext } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

interface Event {
  id: number;
  occurred_at: string;
  actor_type: string;
  actor_id: string | null;
  request_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

describe(`audit trail [${BACKEND}]`, () => {
  let ctx: TestContext;
  let requestCounter = 0;

  /** A request id no other request of this file sends. */
  const requestId = (label: string) => `${label}-${process.pid}-${++requestCounter}`;

  /** Calls the admin API with the token and an X-Request-Id. */
  const admin = (method: InjectOptions['method'], path: string, id: string, body?: unknown) =>
    ctx.app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-request-id': id },
      ...(body === undefined ? {} : { payload: body as object }),
    });

  /** Every audit event of a workspace, oldest first, read page by page. */
  async function events(subdomain: string): Promise<Event[]> {
    const all: Event[] = [];
    for (let page = 1; ; page += 1) {
      const res = await ctx.admin('GET', `/workspaces/${subdomain}/audit-events?page_size=100&page_number=${page}`);
      assert.equal(res.statusCode, 200, res.body);
      const items = json<{ audit_events: Event[] }>(res).audit_events;
      if (items.length === 0) return all;
      all.push(...items);
    }
  }

  /** Every audit event of the service (catalogue changes included), oldest first. */
  async function allEvents(): Promise<Event[]> {
    const all: Event[] = [];
    for (let page = 1; ; page += 1) {
      const res = await ctx.admin('GET', `/audit-events?page_size=100&page_number=${page}`);
      assert.equal(res.statusCode, 200, res.body);
      const items = json<{ audit_events: Event[] }>(res).audit_events;
      if (items.length === 0) return all;
      all.push(...items);
    }
  }

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.equal(json<'Problem'>(res).code, code);
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('creating a workspace records workspace.created and api_key.created by the admin, without the plaintext key', async () => {
    const id = requestId('create-ws');
    const subdomain = `audit-${process.pid}-ws`;
    const res = await admin('POST', '/workspaces', id, { subdomain, name: 'Audited' });
    assert.equal(res.statusCode, 201, res.body);
    const created = json<'createWorkspace'>(res);

    const list = await ctx.admin('GET', `/workspaces/${subdomain}/audit-events`);
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(created.api_key.key), 'the plaintext key is never in the audit trail');
    const trail = json<{ audit_events: Event[] }>(list).audit_events;
    assert.deepEqual(trail.map((e) => e.action), ['workspace.created', 'api_key.created']);
    const [ws, key] = trail as [Event, Event];
    for (const e of trail) {
      assert.equal(e.actor_type, 'operator');
      assert.equal(e.actor_id, null);
      assert.equal(e.request_id, id);
      assert.match(e.occurred_at, TIMESTAMP);
      assert.equal(typeof e.id, 'number');
    }
    assert.equal(ws.target_type, 'workspace');
    assert.equal(ws.target_id, subdomain);
    assert.equal(ws.before, null);
    assert.deepEqual(ws.after, { subdomain, name: 'Audited' });
    assert.equal(key.target_type, 'api_key');
    assert.equal(key.target_id, created.api_key.id);
    assert.equal(key.before, null);
    assert.equal(key.after?.id, created.api_key.id);
    assert.equal(key.after?.prefix, created.api_key.prefix);
    assert.equal(key.after?.revoked_at, null);
    assert.ok(!('key' in (key.after ?? {})));
  });

  test('user changes through the external API are attributed to the key, with the request id and before/after', async () => {
    const ws = await ctx.createWorkspace('audit-users');
    const baseline = (await events(ws.subdomain)).length;
    const addId = requestId('add');
    const add = await ctx.api(ws, 'POST', '/users', {
      body: userBody('ada@example.com', { first_name: 'Ada', apps: [{ name: 'crm', role: 'admin' }] }),
      headers: { 'x-request-id': addId },
    });
    assert.equal(add.statusCode, 201, add.body);
    const offId = requestId('deactivate');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/ADA@example.com', { headers: { 'x-request-id': offId } })).statusCode, 204);
    const backId = requestId('reactivate');
    const back = await ctx.api(ws, 'POST', '/users', {
      body: userBody('ada@example.com', { role: 'owner', apps: [{ name: 'helpdesk', role: 'agent' }] }),
      headers: { 'x-request-id': backId },
    });
    assert.equal(back.statusCode, 201, back.body);

    const trail = (await events(ws.subdomain)).slice(baseline);
    assert.deepEqual(trail.map((e) => e.action), ['user.created', 'user.deactivated', 'user.reactivated']);
    assert.deepEqual(trail.map((e) => e.request_id), [addId, offId, backId]);
    for (const e of trail) {
      assert.equal(e.actor_type, 'api_key');
      assert.equal(e.actor_id, ws.apiKeyId);
      assert.equal(e.target_type, 'user');
      assert.equal(e.target_id, 'ada@example.com');
      assert.match(e.occurred_at, TIMESTAMP);
    }
    const [created, deactivated, reactivated] = trail as [Event, Event, Event];
    assert.ok(created.id < deactivated.id && deactivated.id < reactivated.id, 'oldest first');

    assert.equal(created.before, null);
    assert.equal(created.after?.email, 'ada@example.com');
    assert.equal(created.after?.status, 'active');
    assert.equal(created.after?.role, 'non_owner');
    assert.equal(created.after?.first_name, 'Ada');
    assert.deepEqual(created.after?.apps, [{ name: 'crm', role: 'admin' }]);

    assert.equal(deactivated.before?.status, 'active');
    assert.equal(deactivated.after?.status, 'deactivated');
    assert.deepEqual(deactivated.after?.apps, [{ name: 'crm', role: 'admin' }], 'a deactivated user keeps its apps');

    assert.equal(reactivated.before?.status, 'deactivated');
    assert.equal(reactivated.before?.role, 'non_owner');
    assert.deepEqual(reactivated.before?.apps, [{ name: 'crm', role: 'admin' }]);
    assert.equal(reactivated.after?.status, 'active');
    assert.equal(reactivated.after?.role, 'owner');
    assert.equal(reactivated.after?.first_name, 'Ada', 'omitted names are kept');
    assert.deepEqual(reactivated.after?.apps, [{ name: 'helpdesk', role: 'agent' }]);
  });

  test('without an X-Request-Id the generated one (the response header) is recorded', async () => {
    const ws = await ctx.createWorkspace('audit-gen');
    const add = await ctx.api(ws, 'POST', '/users', { body: userBody('gen@example.com') });
    assert.equal(add.statusCode, 201);
    const generated = add.headers['x-request-id'] as string;
    assert.ok(generated);
    const last = (await events(ws.subdomain)).at(-1)!;
    assert.equal(last.action, 'user.created');
    assert.equal(last.request_id, generated);
  });

  test('each API key is its own actor', async () => {
    const ws = await ctx.createWorkspace('audit-actor');
    const second = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`));
    await ctx.api(ws, 'POST', '/users', { body: userBody('one@example.com') });
    await ctx.api({ ...ws, apiKey: second.key }, 'POST', '/users', { body: userBody('two@example.com') });
    const created = (await events(ws.subdomain)).filter((e) => e.action === 'user.created');
    assert.deepEqual(
      created.map((e) => [e.target_id, e.actor_id]),
      [
        ['one@example.com', ws.apiKeyId],
        ['two@example.com', second.id],
      ],
    );
  });

  test('creating and revoking keys is recorded by the admin; a repeated revoke records nothing', async () => {
    const ws = await ctx.createWorkspace('audit-keys');
    const createId = requestId('key-create');
    const key = json<'createApiKey'>(await admin('POST', `/workspaces/${ws.subdomain}/api-keys`, createId));
    const revokeId = requestId('key-revoke');
    assert.equal((await admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${key.id}`, revokeId)).statusCode, 204);
    assert.equal((await admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${key.id}`, requestId('again'))).statusCode, 204);

    const trail = await events(ws.subdomain);
    assert.deepEqual(trail.map((e) => e.action), ['workspace.created', 'api_key.created', 'api_key.created', 'api_key.revoked']);
    const created = trail[2]!;
    const revoked = trail[3]!;
    assert.equal(created.target_id, key.id);
    assert.equal(created.request_id, createId);
    assert.equal(created.actor_type, 'operator');
    assert.equal(revoked.target_type, 'api_key');
    assert.equal(revoked.target_id, key.id);
    assert.equal(revoked.request_id, revokeId);
    assert.equal(revoked.actor_type, 'operator');
    assert.equal(revoked.before?.revoked_at, null);
    assert.match(revoked.after?.revoked_at as string, TIMESTAMP);
    assert.ok(!JSON.stringify(trail).includes(key.key), 'no plaintext key');
  });

  test('rejected requests write no event', async () => {
    const ws = await ctx.createWorkspace('audit-rejected');
    await ctx.api(ws, 'POST', '/users', { body: userBody('owner@example.com', { role: 'owner' }) });
    await ctx.api(ws, 'POST', '/users', { body: userBody('taken@example.com') });
    const before = await events(ws.subdomain);

    const invalid = await ctx.api(ws, 'POST', '/users', { body: { user: { email: 'nope', role: 'x', apps: [] } } });
    assertProblem(invalid, 400, 'validation_failed');
    assertProblem(await ctx.api(ws, 'POST', '/users', { body: userBody('taken@example.com') }), 409, 'user_already_exists');
    const unknown = await ctx.api(ws, 'POST', '/users', { body: userBody('new@example.com', { apps: [{ name: 'nope', role: 'x' }] }) });
    assertProblem(unknown, 422, 'unknown_product');
    const badRole = await ctx.api(ws, 'POST', '/users', { body: userBody('new@example.com', { apps: [{ name: 'crm', role: 'x' }] }) });
    assertProblem(badRole, 422, 'unknown_product_role');
    assertProblem(await ctx.api(ws, 'DELETE', '/users/owner@example.com'), 409, 'last_owner');
    assertProblem(await ctx.api(ws, 'DELETE', '/users/ghost@example.com'), 404, 'user_not_found');
    assertProblem(
      await ctx.api(ws, 'POST', '/users', { body: userBody('k@example.com'), headers: { 'x-api-key': 'wum_wrong' } }),
      401,
      'invalid_api_key',
    );
    assertProblem(await ctx.admin('POST', '/workspaces', { subdomain: ws.subdomain }), 409, 'workspace_exists');
    assertProblem(await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/00000000-0000-4000-8000-000000000000`), 404, 'api_key_not_found');

    assert.deepEqual(await events(ws.subdomain), before);
  });

  test('a no-op (deactivating an already deactivated user) writes no event', async () => {
    const ws = await ctx.createWorkspace('audit-noop');
    await ctx.api(ws, 'POST', '/users', { body: userBody('gone@example.com') });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/gone@example.com')).statusCode, 204);
    const before = await events(ws.subdomain);
    assert.equal(before.at(-1)!.action, 'user.deactivated');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/gone@example.com')).statusCode, 204);
    assert.equal((await ctx.api(ws, 'DELETE', '/users/GONE@example.com')).statusCode, 204);
    assert.deepEqual(await events(ws.subdomain), before);
  });

  test('events are per workspace', async () => {
    const a = await ctx.createWorkspace('audit-a');
    const b = await ctx.createWorkspace('audit-b');
    await ctx.api(a, 'POST', '/users', { body: userBody('only-a@example.com') });
    const bTrail = await events(b.subdomain);
    assert.ok(!bTrail.some((e) => e.target_id === 'only-a@example.com'));
    assert.ok(!bTrail.some((e) => e.target_id === a.apiKeyId || e.target_id === a.subdomain));
    assert.ok((await events(a.subdomain)).some((e) => e.target_id === 'only-a@example.com'));
  });

  test('catalogue changes appear in GET /admin/v1/audit-events, not in any workspace trail', async () => {
    const putId = requestId('product-put');
    assert.equal((await admin('PUT', '/products/audit-prod', putId, { roles: ['a', 'b'] })).statusCode, 201);
    const replaceId = requestId('product-replace');
    assert.equal((await admin('PUT', '/products/audit-prod', replaceId, { roles: ['b', 'c'] })).statusCode, 200);
    const deleteId = requestId('product-delete');
    assert.equal((await admin('DELETE', '/products/audit-prod', deleteId)).statusCode, 204);

    const trail = (await allEvents()).filter((e) => e.target_type === 'product' && e.target_id === 'audit-prod');
    assert.deepEqual(trail.map((e) => e.action), ['product.created', 'product.updated', 'product.deleted']);
    assert.deepEqual(trail.map((e) => e.request_id), [putId, replaceId, deleteId]);
    for (const e of trail) {
      assert.equal(e.actor_type, 'operator');
      assert.equal(e.actor_id, null);
    }
    const [created, updated, deleted] = trail as [Event, Event, Event];
    assert.equal(created.before, null);
    assert.deepEqual(created.after, { name: 'audit-prod', roles: ['a', 'b'] });
    assert.deepEqual(updated.before, { name: 'audit-prod', roles: ['a', 'b'] });
    assert.deepEqual(updated.after, { name: 'audit-prod', roles: ['b', 'c'] });
    assert.deepEqual(deleted.before, { name: 'audit-prod', roles: ['b', 'c'] });
    assert.equal(deleted.after, null);

    const ws = await ctx.createWorkspace('audit-catalogue');
    assert.ok(!(await events(ws.subdomain)).some((e) => e.target_type === 'product'));
  });

  test('the global trail also holds workspace events; refused catalogue changes write none', async () => {
    const ws = await ctx.createWorkspace('audit-global');
    await ctx.admin('PUT', '/products/audit-held', { roles: ['member'] });
    await ctx.api(ws, 'POST', '/users', { body: userBody('h@example.com', { apps: [{ name: 'audit-held', role: 'member' }] }) });
    const before = await allEvents();
    assert.ok(before.some((e) => e.action === 'user.created' && e.target_id === 'h@example.com'));
    assert.ok(before.some((e) => e.action === 'workspace.created' && e.target_id === ws.subdomain));

    assertProblem(await ctx.admin('DELETE', '/products/audit-held'), 409, 'product_in_use');
    assertProblem(await ctx.admin('PUT', '/products/audit-held', { roles: ['other'] }), 409, 'product_in_use');
    assertProblem(await ctx.admin('PUT', '/products/audit-held', { roles: [] }), 400, 'validation_failed');
    assertProblem(await ctx.admin('DELETE', '/products/audit-missing'), 404, 'product_not_found');
    assert.deepEqual(await allEvents(), before);
  });

  test('the global trail names each event\'s workspace (null for the catalogue); a workspace\'s own trail does not', async () => {
    const ws = await ctx.createWorkspace('audit-named');
    await ctx.api(ws, 'POST', '/users', { body: userBody('named@example.com') });
    assert.equal((await ctx.admin('PUT', '/products/audit-named', { roles: ['a'] })).statusCode, 201);
    const all = (await allEvents()) as Array<Event & { workspace?: string | null }>;
    const userCreated = all.find((e) => e.action === 'user.created' && e.target_id === 'named@example.com');
    assert.equal(userCreated?.workspace, ws.subdomain);
    assert.equal(all.find((e) => e.action === 'workspace.created' && e.target_id === ws.subdomain)?.workspace, ws.subdomain);
    assert.equal(all.find((e) => e.action === 'product.created' && e.target_id === 'audit-named')?.workspace, null);
    const filtered = await ctx.admin('GET', `/audit-events?workspace=${ws.subdomain.toUpperCase()}&page_size=100`);
    assert.ok(json<'listAuditEvents'>(filtered).audit_events.length > 0);
    for (const e of json<'listAuditEvents'>(filtered).audit_events) assert.equal(e.workspace, ws.subdomain);
    assert.ok((await events(ws.subdomain)).every((e) => !('workspace' in e)), 'the workspace is known there');
  });

  test('paginated like users: envelope, page sizes, oldest first, empty page past the end', async () => {
    const ws = await ctx.createWorkspace('audit-pages');
    for (const email of ['p1@example.com', 'p2@example.com', 'p3@example.com']) {
      await ctx.api(ws, 'POST', '/users', { body: userBody(email) });
    }
    const all = await events(ws.subdomain);
    assert.equal(all.length, 5, 'workspace, first key, three users');

    const page = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=2&page_number=2`);
    assert.equal(page.statusCode, 200);
    const body = json<'listWorkspaceAuditEvents'>(page);
    assert.deepEqual(Object.keys(body).sort(), ['audit_events', 'next_cursor', 'pagination', 'total_count']);
    assert.deepEqual(body.pagination, { total_records: 5, current_page_number: 2, total_pages: 3, page_size: 2 });
    assert.equal(body.next_cursor, all[3]!.id, 'the cursor of the page after: the id of its last event');
    assert.equal(body.total_count, 5);
    assert.deepEqual(body.audit_events, all.slice(2, 4));
    assert.match(page.headers.link as string, /rel="next"/);

    const last = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=2&page_number=3`);
    assert.deepEqual(json<'listWorkspaceAuditEvents'>(last).audit_events, all.slice(4));
    const past = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=2&page_number=4`);
    assert.equal(past.statusCode, 200);
    assert.deepEqual(json<'listWorkspaceAuditEvents'>(past).audit_events, []);
    assert.equal(json<'listWorkspaceAuditEvents'>(past).total_count, 5);

    const defaults = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`);
    assert.equal(json<'listWorkspaceAuditEvents'>(defaults).pagination?.page_size, 30);
    assert.deepEqual(json<'listWorkspaceAuditEvents'>(defaults).audit_events, all);
    const ids = all.map((e) => e.id);
    assert.deepEqual(ids, [...ids].sort((x, y) => x - y));

    for (const query of ['page_size=0', 'page_size=101', 'page_size=x', 'page_number=0', 'page_number=1.5']) {
      const bad = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?${query}`);
      assertProblem(bad, 400, 'invalid_parameter');
      const globalBad = await ctx.admin('GET', `/audit-events?${query}`);
      assertProblem(globalBad, 400, 'invalid_parameter');
    }
  });

  test('deleting a workspace is recorded in the global trail, by the admin, after its own trail is gone', async () => {
    const ws = await ctx.createWorkspace('audit-drop');
    await ctx.api(ws, 'POST', '/users', { body: userBody('bye@example.com') });
    const id = requestId('ws-delete');
    assert.equal((await admin('DELETE', `/workspaces/${ws.subdomain}`, id)).statusCode, 204);
    const trail = await allEvents();
    assert.ok(!trail.some((e) => e.target_id === 'bye@example.com'), "the workspace's own trail went with it");
    const deleted = trail.filter((e) => e.action === 'workspace.deleted' && e.target_id === ws.subdomain);
    assert.equal(deleted.length, 1);
    assert.equal(deleted[0]!.actor_type, 'operator');
    assert.equal(deleted[0]!.request_id, id);
    assert.equal(deleted[0]!.target_type, 'workspace');
    assert.deepEqual(deleted[0]!.before, { subdomain: ws.subdomain, name: ws.subdomain });
    assert.equal(deleted[0]!.after, null);
    const before = await allEvents();
    assert.equal((await admin('DELETE', `/workspaces/${ws.subdomain}`, requestId('again'))).statusCode, 404);
    assert.deepEqual(await allEvents(), before, 'a refused deletion records nothing');
  });

  test('an unknown or deleted workspace → 404 workspace_not_found', async () => {
    assertProblem(await ctx.admin('GET', `/workspaces/nobody-${process.pid}/audit-events`), 404, 'workspace_not_found');
    const ws = await ctx.createWorkspace('audit-deleted');
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}`)).statusCode, 204);
    assertProblem(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`), 404, 'workspace_not_found');
  });

  test('the audit trail requires the admin token', async () => {
    const ws = await ctx.createWorkspace('audit-auth');
    for (const url of [`/admin/v1/workspaces/${ws.subdomain}/audit-events`, '/admin/v1/audit-events']) {
      const res = await ctx.app.inject({ method: 'GET', url, headers: { 'x-api-key': ws.apiKey } });
      assertProblem(res, 401, 'invalid_admin_token');
    }
  });
});
