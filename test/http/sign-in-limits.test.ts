import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const START = '/console/oidc/start';
const OPERATOR_START = '/console/operator/oidc/start';

/*
 * Sign-in starts are limited per client address (SIGN_IN_START_LIMIT, 60 a minute by default)
 * and per workspace (SIGN_IN_START_LIMIT_PER_WORKSPACE), the operators' sign-in counting as one
 * workspace (docs/security.md, "Hardening controls"): each start stores a sign-in under way, so
 * an anonymous flood must end in 429 rate_limited with Retry-After, storing nothing more.
 */
describe(`sign-in starts are limited [${BACKEND}]`, () => {
  let ctx: TestContext;
  let op: TestOpenIdProvider;
  let ws: TestWorkspace;
  let other: TestWorkspace;

  before(async () => {
    // The test provider is plain http on loopback, which the outbound guard allows only with WEBHOOK_ALLOW_HTTP.
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    op = await startOpenIdProvider(['http://127.0.0.1/console/oidc/callback']);
    ws = await ctx.createWorkspace('starts');
    other = await ctx.createWorkspace('starts-other');
    for (const workspace of [ws, other]) {
      const set = await ctx.admin('PUT', `/workspaces/${workspace.subdomain}/identity-provider`, { issuer: op.issuer, client_id: op.clientId, client_secret: op.clientSecret });
      assert.equal(set.statusCode, 201, set.body);
    }
  });
  after(async () => {
    await op?.close();
    await ctx?.close();
  });

  const start = (app: FastifyInstance, host: string, remoteAddress: string, url = START) => app.inject({ method: 'GET', url, headers: { host }, remoteAddress });

  async function storedSignIns(table: 'oidc_sign_ins' | 'operator_sign_ins'): Promise<number> {
    const result = (await ctx.database.db.execute(sql`select count(*)::int as n from ${sql.identifier(table)}`)) as unknown as { rows: Array<{ n: number }> };
    return result.rows[0]!.n;
  }

  function assertLimited(res: LightMyRequestResponse): void {
    assert.equal(res.statusCode, 429, res.body);
    assert.equal(json<'Problem'>(res).code, 'rate_limited');
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.match(res.headers['retry-after'] as string, /^[1-9]\d*$/);
    assert.ok(Number(res.headers['retry-after']) <= 60, 'a token is back within the minute');
  }

  test('by default the 61st start from one address in a minute → 429 rate_limited with Retry-After, and nothing more is stored', async () => {
    const stored = await storedSignIns('oidc_sign_ins');
    // All at once, so that the bucket (refilled at one start a second) has no time to refill;
    // to two workspaces, since the limit is per address over every workspace.
    const answers = await Promise.all(Array.from({ length: 61 }, (_, i) => start(ctx.app, i % 5 === 0 ? other.host : ws.host, '198.51.100.7')));
    const started = answers.filter((res) => res.statusCode === 302);
    const refused = answers.filter((res) => res.statusCode !== 302);
    assert.equal(started.length, 60, answers.map((res) => res.statusCode).join(' '));
    for (const res of started) assert.ok((res.headers.location as string).startsWith(op.issuer), 'sent to the provider');
    assert.equal(refused.length, 1);
    assertLimited(refused[0]!);
    assert.match(refused[0]!.headers.ratelimit as string, /^"sign-in-starts";r=0;/);
    assert.equal(await storedSignIns('oidc_sign_ins'), stored + 60, 'a refused start stores nothing');
    // Another address still starts.
    assert.equal((await start(ctx.app, ws.host, '198.51.100.8')).statusCode, 302);
  });

  test('the per-workspace limit refuses starts from any address past it; another workspace is not affected', async () => {
    const app = await ctx.buildApp({ SIGN_IN_START_LIMIT_PER_WORKSPACE: '3' });
    for (let i = 1; i <= 3; i += 1) assert.equal((await start(app, ws.host, `203.0.113.${i}`)).statusCode, 302, `start ${i}`);
    const refused = await start(app, ws.host, '203.0.113.99');
    assertLimited(refused);
    assert.match(refused.headers.ratelimit as string, /^"sign-in-starts-workspace";r=0;/);
    assert.equal((await start(app, other.host, '203.0.113.99')).statusCode, 302, 'another workspace has its own budget');
  });

  test('SIGN_IN_START_LIMIT=0 and SIGN_IN_START_LIMIT_PER_WORKSPACE=0 turn the limits off', async () => {
    const app = await ctx.buildApp({ SIGN_IN_START_LIMIT: '0', SIGN_IN_START_LIMIT_PER_WORKSPACE: '0' });
    for (let i = 1; i <= 62; i += 1) assert.equal((await start(app, ws.host, '192.0.2.10')).statusCode, 302, `start ${i}`);
  });

  test('the operators\' sign-in start is limited per address and as one workspace; a workspace host spends nothing', async () => {
    const operators = { OPERATOR_OIDC_ISSUER: op.issuer, OPERATOR_OIDC_CLIENT_ID: op.clientId, OPERATOR_OIDC_CLIENT_SECRET: op.clientSecret, OPERATOR_EMAILS: 'ada@example.com' };
    const app = await ctx.buildApp({ ...operators, SIGN_IN_START_LIMIT: '2' });
    for (let i = 0; i < 3; i += 1) assert.equal((await start(app, ws.host, '192.0.2.20', OPERATOR_START)).statusCode, 404, 'no operator sign-in on a workspace host');
    const stored = await storedSignIns('operator_sign_ins');
    for (let i = 1; i <= 2; i += 1) assert.equal((await start(app, 'localhost:3000', '192.0.2.20', OPERATOR_START)).statusCode, 302, `start ${i}`);
    assertLimited(await start(app, 'localhost:3000', '192.0.2.20', OPERATOR_START));
    assert.equal(await storedSignIns('operator_sign_ins'), stored + 2);
    assert.equal((await start(app, 'localhost:3000', '192.0.2.21', OPERATOR_START)).statusCode, 302, 'another address');

    const perWorkspace = await ctx.buildApp({ ...operators, SIGN_IN_START_LIMIT_PER_WORKSPACE: '2' });
    for (const address of ['192.0.2.30', '192.0.2.31']) assert.equal((await start(perWorkspace, 'localhost:3000', address, OPERATOR_START)).statusCode, 302);
    assertLimited(await start(perWorkspace, 'localhost:3000', '192.0.2.32', OPERATOR_START));
    assert.equal((await start(perWorkspace, ws.host, '192.0.2.32')).statusCode, 302, 'a workspace\'s budget is its own');
  });
});
