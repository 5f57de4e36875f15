import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.ts';
import { serializeError } from '../../src/http/log-serializers.ts';
import { createIdempotencyStore } from '../../src/storage/idempotency.queries.ts';
import { ADMIN_TOKEN, BACKEND, createTestContext, testConfig, userBody, type TestContext } from '../helpers/test-context.ts';
import { webhookUrlCheck } from '../../src/webhooks/url-guard.ts';
import { json } from '../helpers/json.ts';

/*
 * What the server log holds after a run through the whole API at the most verbose level:
 * route patterns, never URLs, so no key, token, secret or email of the run appears in it.
 */

describe(`the server log holds no credential and no email [${BACKEND}]`, () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let log = '';

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    const stream = new Writable({
      write(chunk, _encoding, done) {
        log += String(chunk);
        done();
      },
    });
    const config = testConfig({ LOG_LEVEL: 'trace', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' });
    app = await buildApp(config, {
      store: ctx.store,
      checkWebhookUrl: webhookUrlCheck(config.webhooks),
      idempotency: createIdempotencyStore(ctx.database.db),
      ping: ctx.database.ping,
      logger: { level: 'trace', stream },
    });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await ctx.close();
  });

  test('a run through the admin, external and SCIM APIs logs route patterns, not keys, tokens, secrets or emails', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const created = await app.inject({ method: 'POST', url: '/admin/v1/workspaces', headers: admin, payload: { subdomain: `logs-${process.pid}` } });
    assert.equal(created.statusCode, 201);
    const key = json<'createWorkspace'>(created).api_key.key as string;
    const host = `logs-${process.pid}.localhost`;
    const endpoint = await app.inject({ method: 'POST', url: `/admin/v1/workspaces/logs-${process.pid}/webhook-endpoints`, headers: admin, payload: { url: 'https://127.0.0.1:9/hook' } });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    const secret = json<'createWebhookEndpoint'>(endpoint).secret as string;
    const emails = ['secret.person@example.com', 'other.person@example.com'];
    const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
      app.inject({ method, url: `/api/external/v2${url}`, headers: { host, 'x-api-key': key }, ...(payload ? { payload } : {}) });
    assert.equal((await api('POST', '/users', userBody(emails[0]!))).statusCode, 201);
    assert.equal((await api('POST', '/users', userBody(emails[1]!))).statusCode, 201);
    assert.equal((await api('POST', '/users', userBody(emails[1]!))).statusCode, 409);
    assert.equal((await api('GET', `/users/${encodeURIComponent(emails[0]!)}`)).statusCode, 200);
    assert.equal((await api('GET', `/users?q=${encodeURIComponent(emails[1]!)}&api_key=${key}&token=${ADMIN_TOKEN}`)).statusCode, 200);
    assert.equal((await api('PATCH', `/users/${encodeURIComponent(emails[0]!)}`, { user: { first_name: 'Changed' } })).statusCode, 200);
    assert.equal((await api('DELETE', `/users/${encodeURIComponent(emails[1]!)}`)).statusCode, 204);
    assert.equal((await api('GET', '/users/nobody.here@example.com')).statusCode, 404);
    const scim = await app.inject({ method: 'GET', url: `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${emails[0]}"`)}`, headers: { host, authorization: `Bearer ${key}` } });
    assert.equal(scim.statusCode, 200);
    const wrong = await app.inject({ method: 'GET', url: `/api/external/v2/users?key=wum_wrong_${'x'.repeat(20)}`, headers: { host, 'x-api-key': `wum_wrong_${'y'.repeat(20)}` } });
    assert.equal(wrong.statusCode, 401);
    assert.equal((await app.inject({ method: 'GET', url: '/admin/v1/workspaces', headers: { authorization: 'Bearer not-the-admin-token-123' } })).statusCode, 401);

    assert.match(log, /"route":"\/api\/external\/v2\/users\/:email"/);
    for (const secretValue of [key, ADMIN_TOKEN, secret, ...emails, 'nobody.here@example.com', 'wum_wrong_', 'not-the-admin-token', 'secret.person%40example.com', 'api_key=']) {
      assert.ok(!log.includes(secretValue), `the log holds ${secretValue}`);
    }
  });

  test('a failed query is logged without its parameter values, as is its PostgreSQL detail', () => {
    const cause = Object.assign(new Error('duplicate key value violates unique constraint "users__email"'), {
      code: '23505',
      detail: 'Key (email)=(someone@example.com) already exists.',
    });
    const failed = Object.assign(new Error('Failed query: insert into users (email) values ($1)\nparams: someone@example.com,owner'), { params: ['someone@example.com', 'owner'], cause });
    const logged = JSON.stringify(serializeError(failed));
    assert.doesNotMatch(logged, /someone@example\.com/);
    assert.match(logged, /insert into users/);
    assert.match(logged, /23505/);
  });
});
