import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe(`admin API: products [${BACKEND}]`, () => {
  let ctx: TestContext;

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, code);
  }

  async function put(name: string, roles: unknown): Promise<LightMyRequestResponse> {
    return ctx.admin('PUT', `/products/${encodeURIComponent(name)}`, { roles });
  }

  /** The product as the admin API shows it, or undefined when it does not exist. */
  async function rolesOf(name: string): Promise<string[] | undefined> {
    const res = await ctx.admin('GET', `/products/${encodeURIComponent(name)}`);
    if (res.statusCode === 404) return undefined;
    assert.equal(res.statusCode, 200, res.body);
    return json<'getCatalogueProduct'>(res).roles;
  }

  /** The product as the external API of `ws` lists it. */
  async function externalRolesOf(ws: TestWorkspace, name: string): Promise<string[] | undefined> {
    const res = await ctx.api(ws, 'GET', '/products');
    assert.equal(res.statusCode, 200, res.body);
    return json<'listProducts'>(res).products.find((p) => p.name === name)?.roles;
  }

  before(async () => {
    ctx = await createTestContext();
  });
  after(() => ctx.close());

  test('PUT creates → 201 with the product, roles in the given order; visible on both APIs', async () => {
    const res = await put('prod-create', ['zeta', 'alpha', 'mid']);
    assert.equal(res.statusCode, 201, res.body);
    const product = json<'putCatalogueProduct'>(res);
    assert.equal(product.name, 'prod-create');
    assert.deepEqual(product.roles, ['zeta', 'alpha', 'mid']);
    assert.match(product.created_at, TIMESTAMP);
    assert.match(product.updated_at, TIMESTAMP);

    const fetched = await ctx.admin('GET', '/products/prod-create');
    assert.equal(fetched.statusCode, 200);
    assert.deepEqual(json<'getCatalogueProduct'>(fetched), product);
    const ws = await ctx.createWorkspace('prod');
    assert.deepEqual(await externalRolesOf(ws, 'prod-create'), ['zeta', 'alpha', 'mid']);
  });

  test('PUT on an existing product replaces its roles → 200, keeping created_at', async () => {
    const created = json<'putCatalogueProduct'>(await put('prod-replace', ['a', 'b']));
    const res = await put('prod-replace', ['c', 'b', 'a']);
    assert.equal(res.statusCode, 200, res.body);
    const replaced = json<'putCatalogueProduct'>(res);
    assert.equal(replaced.name, 'prod-replace');
    assert.deepEqual(replaced.roles, ['c', 'b', 'a']);
    assert.equal(replaced.created_at, created.created_at);
    assert.ok(Date.parse(replaced.updated_at) >= Date.parse(created.updated_at));
    assert.deepEqual(await rolesOf('prod-replace'), ['c', 'b', 'a']);
    const same = await put('prod-replace', ['c', 'b', 'a']);
    assert.equal(same.statusCode, 200, 'putting the same roles again is a replace too');
  });

  test('a product’s roles are what users may hold, immediately after each PUT', async () => {
    const ws = await ctx.createWorkspace('prod');
    await put('prod-roles', ['viewer']);
    const refused = await ctx.api(ws, 'POST', '/users', { body: userBody('r@example.com', { apps: [{ name: 'prod-roles', role: 'editor' }] }) });
    assertProblem(refused, 422, 'unknown_product_role');
    await put('prod-roles', ['viewer', 'editor']);
    const added = await ctx.api(ws, 'POST', '/users', { body: userBody('r@example.com', { apps: [{ name: 'prod-roles', role: 'editor' }] }) });
    assert.equal(added.statusCode, 201, added.body);
  });

  test('invalid bodies → 400 validation_failed and the catalogue is unchanged', async () => {
    await put('prod-valid', ['one']);
    const bodies: unknown[] = [
      { roles: [] },
      { roles: ['a', 'a'] },
      { roles: 'admin' },
      { roles: null },
      { roles: { admin: true } },
      { roles: [1, 2] },
      { roles: [''] },
      { roles: ['has space'] },
      { roles: ['ok'], extra: 1 },
      {},
    ];
    for (const body of bodies) {
      for (const name of ['prod-valid', 'prod-never']) {
        const res = await ctx.admin('PUT', `/products/${name}`, body);
        assertProblem(res, 400, 'validation_failed');
        assert.ok(json<'Problem'>(res).errors!.length > 0, JSON.stringify(body));
      }
    }
    const extra = await ctx.admin('PUT', '/products/prod-valid', { roles: ['ok'], extra: 1 });
    assert.deepEqual(json<'Problem'>(extra).errors!.map((e) => e.field), ['extra']);
    const dup = await ctx.admin('PUT', '/products/prod-valid', { roles: ['a', 'a'] });
    assert.deepEqual(json<'Problem'>(dup).errors!.map((e) => e.field), ['roles']);
    assert.deepEqual(await rolesOf('prod-valid'), ['one']);
    assert.equal(await rolesOf('prod-never'), undefined);
  });

  test('a name that is not a product name → 400, nothing created', async () => {
    for (const name of ['-bad', 'a b', 'x'.repeat(65)]) {
      const res = await put(name, ['member']);
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    }
    const names = json<'listCatalogueProducts'>(await ctx.admin('GET', '/products')).products.map((p) => p.name);
    assert.ok(!names.includes('-bad') && !names.includes('a b'));
  });

  test('GET /admin/v1/products lists the catalogue sorted by name, roles in their defined order', async () => {
    await put('prod-list-b', ['y', 'x']);
    await put('prod-list-a', ['q', 'p']);
    await put('Prod-list-c', ['only']);
    const res = await ctx.admin('GET', '/products');
    assert.equal(res.statusCode, 200);
    const products: { name: string; roles: string[]; created_at: string; updated_at: string }[] = json<'listCatalogueProducts'>(res).products;
    const names = products.map((p) => p.name);
    assert.deepEqual(names, [...names].sort(), 'sorted by name (byte order)');
    const mine = products.filter((p) => /^prod-list-/i.test(p.name));
    assert.deepEqual(
      mine.map((p) => [p.name, p.roles]),
      [
        ['Prod-list-c', ['only']],
        ['prod-list-a', ['q', 'p']],
        ['prod-list-b', ['y', 'x']],
      ],
    );
    for (const p of products) {
      assert.deepEqual(Object.keys(p).sort(), ['created_at', 'name', 'roles', 'updated_at']);
    }
  });

  test('GET and DELETE of an unknown product → 404 product_not_found', async () => {
    assertProblem(await ctx.admin('GET', '/products/prod-missing'), 404, 'product_not_found');
    assertProblem(await ctx.admin('DELETE', '/products/prod-missing'), 404, 'product_not_found');
  });

  test('DELETE → 204; then GET and a second DELETE → 404, gone from both listings', async () => {
    await put('prod-delete', ['member']);
    const res = await ctx.admin('DELETE', '/products/prod-delete');
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    assertProblem(await ctx.admin('GET', '/products/prod-delete'), 404, 'product_not_found');
    assertProblem(await ctx.admin('DELETE', '/products/prod-delete'), 404, 'product_not_found');
    const names = json<'listCatalogueProducts'>(await ctx.admin('GET', '/products')).products.map((p) => p.name);
    assert.ok(!names.includes('prod-delete'));
    const ws = await ctx.createWorkspace('prod');
    assert.equal(await externalRolesOf(ws, 'prod-delete'), undefined);
    const add = await ctx.api(ws, 'POST', '/users', { body: userBody('d@example.com', { apps: [{ name: 'prod-delete', role: 'member' }] }) });
    assertProblem(add, 422, 'unknown_product');
  });

  test('removing a product an active user holds → 409 product_in_use; the catalogue is unchanged', async () => {
    await put('prod-held', ['admin', 'member']);
    const ws = await ctx.createWorkspace('held');
    const add = await ctx.api(ws, 'POST', '/users', { body: userBody('holder@example.com', { apps: [{ name: 'prod-held', role: 'member' }] }) });
    assert.equal(add.statusCode, 201, add.body);
    assertProblem(await ctx.admin('DELETE', '/products/prod-held'), 409, 'product_in_use');
    assert.deepEqual(await rolesOf('prod-held'), ['admin', 'member']);
    assert.deepEqual(await externalRolesOf(ws, 'prod-held'), ['admin', 'member']);
    const user = await ctx.api(ws, 'GET', '/users/holder@example.com');
    assert.deepEqual(json<'User'>(user).apps, [{ name: 'prod-held', role: 'member' }]);
  });

  test('an active user in any workspace keeps a product in use (products are global)', async () => {
    await put('prod-global', ['member']);
    const holder = await ctx.createWorkspace('global-a');
    const other = await ctx.createWorkspace('global-b');
    await ctx.api(holder, 'POST', '/users', { body: userBody('g@example.com', { apps: [{ name: 'prod-global', role: 'member' }] }) });
    await ctx.api(other, 'POST', '/users', { body: userBody('g@example.com', { apps: [] }) });
    assertProblem(await ctx.admin('DELETE', '/products/prod-global'), 409, 'product_in_use');
    assert.equal((await ctx.api(holder, 'DELETE', '/users/g@example.com')).statusCode, 204);
    assert.equal((await ctx.admin('DELETE', '/products/prod-global')).statusCode, 204);
  });

  test('dropping a role an active user holds via PUT → 409 product_in_use; dropping an unheld role is fine', async () => {
    await put('prod-drop', ['admin', 'member', 'guest']);
    const ws = await ctx.createWorkspace('drop');
    await ctx.api(ws, 'POST', '/users', { body: userBody('a@example.com', { apps: [{ name: 'prod-drop', role: 'admin' }] }) });

    assertProblem(await put('prod-drop', ['member', 'guest']), 409, 'product_in_use');
    assertProblem(await put('prod-drop', ['other']), 409, 'product_in_use');
    assert.deepEqual(await rolesOf('prod-drop'), ['admin', 'member', 'guest'], 'unchanged');

    const dropGuest = await put('prod-drop', ['member', 'admin', 'owner']);
    assert.equal(dropGuest.statusCode, 200, dropGuest.body);
    assert.deepEqual(json<'putCatalogueProduct'>(dropGuest).roles, ['member', 'admin', 'owner']);
    assert.deepEqual(await rolesOf('prod-drop'), ['member', 'admin', 'owner']);
    const user = await ctx.api(ws, 'GET', '/users/a@example.com');
    assert.deepEqual(json<'User'>(user).apps, [{ name: 'prod-drop', role: 'admin' }]);
  });

  test('allowed when only deactivated users hold it; their list items still show the apps they held', async () => {
    await put('prod-retired', ['admin', 'member']);
    await put('prod-trimmed', ['editor', 'viewer']);
    const ws = await ctx.createWorkspace('retired');
    const apps = [
      { name: 'prod-retired', role: 'member' },
      { name: 'prod-trimmed', role: 'editor' },
    ];
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('old@example.com', { apps }) })).statusCode, 201);
    assertProblem(await ctx.admin('DELETE', '/products/prod-retired'), 409, 'product_in_use');
    assertProblem(await put('prod-trimmed', ['viewer']), 409, 'product_in_use');

    assert.equal((await ctx.api(ws, 'DELETE', '/users/old@example.com')).statusCode, 204);
    assert.equal((await ctx.admin('DELETE', '/products/prod-retired')).statusCode, 204);
    const trimmed = await put('prod-trimmed', ['viewer']);
    assert.equal(trimmed.statusCode, 200, trimmed.body);

    const list = await ctx.api(ws, 'GET', '/users', { query: { status: 'deactivated' } });
    assert.equal(list.statusCode, 200);
    const item = json<'listUsers'>(list).users.find((u) => u.email === 'old@example.com');
    assert.ok(item, 'the deactivated user is listed');
    assert.equal(item.status, 'deactivated');
    assert.deepEqual(item.apps, apps);
    assert.deepEqual(json<'User'>(await ctx.api(ws, 'GET', '/users/old@example.com')).apps, apps);

    const reactivate = await ctx.api(ws, 'POST', '/users', { body: userBody('old@example.com', { apps }) });
    assertProblem(reactivate, 422, 'unknown_product');
    const stillDeactivated = await ctx.api(ws, 'GET', '/users/old@example.com');
    assert.equal(json<'User'>(stillDeactivated).status, 'deactivated');
  });

  test('product names are case-sensitive: CRM and crm are two products', async () => {
    const upper = await put('PROD-CASE', ['Admin']);
    assert.equal(upper.statusCode, 201);
    const lower = await put('prod-case', ['member']);
    assert.equal(lower.statusCode, 201, 'a different product, not a replace');
    assert.deepEqual(await rolesOf('PROD-CASE'), ['Admin']);
    assert.deepEqual(await rolesOf('prod-case'), ['member']);
    assertProblem(await ctx.admin('GET', '/products/Prod-Case'), 404, 'product_not_found');

    const ws = await ctx.createWorkspace('case');
    const wrongCase = await ctx.api(ws, 'POST', '/users', { body: userBody('c@example.com', { apps: [{ name: 'Prod-Case', role: 'member' }] }) });
    assertProblem(wrongCase, 422, 'unknown_product');
    const wrongRoleCase = await ctx.api(ws, 'POST', '/users', { body: userBody('c@example.com', { apps: [{ name: 'PROD-CASE', role: 'admin' }] }) });
    assertProblem(wrongRoleCase, 422, 'unknown_product_role');
    const added = await ctx.api(ws, 'POST', '/users', { body: userBody('c@example.com', { apps: [{ name: 'PROD-CASE', role: 'Admin' }] }) });
    assert.equal(added.statusCode, 201, added.body);

    assertProblem(await ctx.admin('DELETE', '/products/PROD-CASE'), 409, 'product_in_use');
    assert.equal((await ctx.admin('DELETE', '/products/prod-case')).statusCode, 204, 'the lower-case one is free');
    assert.deepEqual(await rolesOf('PROD-CASE'), ['Admin']);
  });

  test('the product routes require the admin token', async () => {
    for (const [method, body] of [['GET', undefined], ['PUT', { roles: ['x'] }], ['DELETE', undefined]] as const) {
      const res = await ctx.app.inject({
        method,
        url: '/admin/v1/products/prod-auth',
        headers: { authorization: 'Bearer nope' },
        ...(body ? { payload: body } : {}),
      });
      assertProblem(res, 401, 'invalid_admin_token');
    }
    assert.equal(await rolesOf('prod-auth'), undefined);
  });
});
