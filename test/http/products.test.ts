import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

interface WireProduct {
  name: string;
  roles: string[];
}

describe(`GET /products [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  /** A suffix that makes this run's product names unique. */
  const tag = randomBytes(4).toString('hex');

  before(async () => {
    ctx = await createTestContext();
    ws = await ctx.createWorkspace();
  });
  after(() => ctx.close());

  async function putProduct(name: string, roles: string[]): Promise<void> {
    const res = await ctx.admin('PUT', `/products/${name}`, { roles });
    assert.ok(res.statusCode === 200 || res.statusCode === 201, res.body);
  }

  async function listProducts(w: TestWorkspace = ws): Promise<WireProduct[]> {
    const res = await ctx.api(w, 'GET', '/products');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/json/);
    const body = json<'listProducts'>(res);
    assert.deepEqual(Object.keys(body), ['products']);
    assert.ok(Array.isArray(body.products));
    return body.products;
  }

  test('lists products sorted by name, each with its roles in the order the operator gave', async () => {
    await putProduct(`zeta-${tag}`, ['viewer', 'admin', 'editor']);
    await putProduct(`alpha-${tag}`, ['member', 'admin']);
    await putProduct(`mid-${tag}`, ['solo']);
    const products = await listProducts();
    const mine = products.filter((p) => p.name.endsWith(`-${tag}`));
    assert.deepEqual(mine, [
      { name: `alpha-${tag}`, roles: ['member', 'admin'] },
      { name: `mid-${tag}`, roles: ['solo'] },
      { name: `zeta-${tag}`, roles: ['viewer', 'admin', 'editor'] },
    ]);
    for (const p of products) assert.deepEqual(Object.keys(p).sort(), ['name', 'roles'], 'only name and roles');
  });

  test('the whole list is sorted by name', async () => {
    await putProduct(`b2-${tag}`, ['r']);
    await putProduct(`b10-${tag}`, ['r']);
    await putProduct(`b1-${tag}`, ['r']);
    const names = (await listProducts()).map((p) => p.name);
    const sorted = [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    assert.deepEqual(names, sorted);
    assert.equal(new Set(names).size, names.length, 'each product once');
    const mine = names.filter((n) => n.startsWith('b') && n.endsWith(`-${tag}`));
    assert.deepEqual(mine, [`b1-${tag}`, `b10-${tag}`, `b2-${tag}`]);
  });

  test('replacing roles shows the new set in the new order', async () => {
    const name = `replace-${tag}`;
    await putProduct(name, ['a', 'b', 'c']);
    assert.deepEqual((await listProducts()).find((p) => p.name === name)?.roles, ['a', 'b', 'c']);
    await putProduct(name, ['c', 'new', 'a']);
    assert.deepEqual((await listProducts()).find((p) => p.name === name)?.roles, ['c', 'new', 'a']);
  });

  test('names are case-sensitive: two products differing in case are both listed', async () => {
    await putProduct(`case-${tag}`, ['lower']);
    await putProduct(`CASE-${tag}`, ['upper']);
    const products = await listProducts();
    assert.deepEqual(products.find((p) => p.name === `case-${tag}`)?.roles, ['lower']);
    assert.deepEqual(products.find((p) => p.name === `CASE-${tag}`)?.roles, ['upper']);
  });

  test('a removed product is no longer listed', async () => {
    const name = `gone-${tag}`;
    await putProduct(name, ['x']);
    assert.ok((await listProducts()).some((p) => p.name === name));
    assert.equal((await ctx.admin('DELETE', `/products/${name}`)).statusCode, 204);
    assert.ok(!(await listProducts()).some((p) => p.name === name));
  });

  test('the catalogue is the same for every workspace', async () => {
    const other = await ctx.createWorkspace();
    await putProduct(`shared-${tag}`, ['one', 'two']);
    assert.deepEqual(await listProducts(other), await listProducts(ws));
    assert.deepEqual((await listProducts(other)).find((p) => p.name === `shared-${tag}`)?.roles, ['one', 'two']);
  });

  test('listed products and roles are exactly what POST /users accepts', async () => {
    const name = `usable-${tag}`;
    await putProduct(name, ['first', 'second']);
    const product = (await listProducts()).find((p) => p.name === name);
    assert.ok(product);
    const ok = await ctx.api(ws, 'POST', '/users', {
      body: userBody(`uses-${tag}@example.com`, { apps: product.roles.map((role) => ({ name, role })) }),
    });
    assert.equal(ok.statusCode, 201, ok.body);
    assert.deepEqual(json<'addUser'>(ok).apps, [{ name, role: 'first' }, { name, role: 'second' }]);
    const wrongCase = await ctx.api(ws, 'POST', '/users', {
      body: userBody(`case-${tag}@example.com`, { apps: [{ name: name.toUpperCase(), role: 'first' }] }),
    });
    assert.equal(wrongCase.statusCode, 422);
    assert.equal(json<'Problem'>(wrongCase).code, 'unknown_product');
  });

  test('needs the workspace key: 401 missing_api_key / invalid_api_key', async () => {
    const none = await ctx.api(ws, 'GET', '/products', { noKey: true });
    assert.equal(none.statusCode, 401);
    assert.equal(json<'Problem'>(none).code, 'missing_api_key');
    const wrong = await ctx.api(ws, 'GET', '/products', { headers: { 'x-api-key': `wum_${randomBytes(32).toString('hex')}` } });
    assert.equal(wrong.statusCode, 401);
    assert.equal(json<'Problem'>(wrong).code, 'invalid_api_key');
  });

  test('only GET: POST /products → 405 method_not_allowed with Allow', async () => {
    const res = await ctx.api(ws, 'POST', '/products', { body: { name: 'x' } });
    assert.equal(res.statusCode, 405);
    assert.equal(json<'Problem'>(res).code, 'method_not_allowed');
    assert.ok((res.headers.allow as string).split(/,\s*/).includes('GET'));
  });
});
