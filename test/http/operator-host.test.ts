import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, BACKEND, createTestContext, type TestContext } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

describe(`the operator interface: its own host, and wrong tokens limited [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
  });
  after(() => ctx.close());

  test('on a workspace host the admin API answers 404 not_found, even with the right token; on the operator hosts it answers', async () => {
    const ws = await ctx.createWorkspace('op');
    for (const host of [ws.host, 'no-such-workspace.localhost:3000', `${ws.subdomain.toUpperCase()}.LOCALHOST`]) {
      for (const path of ['/admin/v1/workspaces', `/admin/v1/workspaces/${ws.subdomain}/api-keys`, '/admin/v1/products']) {
        const res = await ctx.app.inject({ method: 'GET', url: path, headers: { host, authorization: `Bearer ${ADMIN_TOKEN}` } });
        assert.equal(res.statusCode, 404, `${host} ${path}`);
        assert.equal(json<'Problem'>(res).code, 'not_found');
        assert.doesNotMatch(res.body, /admin token/i);
      }
    }
    const created = await ctx.app.inject({ method: 'POST', url: '/admin/v1/workspaces', headers: { host: ws.host, authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { subdomain: `op-${process.pid}-refused` } });
    assert.equal(created.statusCode, 404);
    for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000', 'localhost']) {
      const res = await ctx.app.inject({ method: 'GET', url: `/admin/v1/workspaces/${ws.subdomain}`, headers: { host, authorization: `Bearer ${ADMIN_TOKEN}` } });
      assert.equal(res.statusCode, 200, host);
    }
    assert.equal((await ctx.admin('GET', `/workspaces/op-${process.pid}-refused`)).statusCode, 404);
  });

  test('wrong admin tokens count toward the failed-attempt limit: 429 with Retry-After; the right token is still served', async () => {
    const app = await ctx.buildApp({ AUTH_FAILURE_LIMIT: '3' });
    const call = (token: string) =>
      app.inject({ method: 'GET', url: '/admin/v1/workspaces', headers: { authorization: `Bearer ${token}` }, remoteAddress: '203.0.113.50' });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await call(`wrong-token-${i}-0123456789`)).statusCode);
    assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
    const limited = await call('wrong-token-5-0123456789');
    assert.equal(limited.statusCode, 429);
    assert.equal(json<'Problem'>(limited).code, 'rate_limited');
    assert.match(String(limited.headers['retry-after']), /^\d+$/);
    assert.equal((await call(ADMIN_TOKEN)).statusCode, 200, 'a valid token is never refused for other tokens\' failures');
    // Another address is not affected.
    const other = await app.inject({ method: 'GET', url: '/admin/v1/workspaces', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, remoteAddress: '203.0.113.51' });
    assert.equal(other.statusCode, 200);
  });
});
