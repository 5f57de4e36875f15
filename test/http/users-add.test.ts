import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';


/** The part of the OpenAPI document that declares the email rule of `POST /users`. */
type EmailRuleDocument = {
  paths: Record<string, { post: { requestBody: { content: Record<string, { schema: { properties: { user: { properties: { email: { format?: string; pattern: string } } } } } }> } } }>;
};
describe(`POST /users [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('adds a user: 201, the full user, Location', async () => {
    ws = await ctx.createWorkspace();
    const res = await ctx.api(ws, 'POST', '/users', {
      body: userBody('Ada@Example.com', { first_name: 'Ada', apps: [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }] }),
    });
    assert.equal(res.statusCode, 201);
    const user = json<'addUser'>(res);
    assert.equal(user.email, 'Ada@Example.com');
    assert.equal(user.role, 'non_owner');
    assert.equal(user.first_name, 'Ada');
    assert.equal(user.last_name, '-');
    assert.deepEqual(user.apps, [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }]);
    assert.equal(user.status, 'active');
    assert.match(user.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    assert.equal(res.headers.location, '/api/external/v2/users/Ada%40Example.com');
    const fetched = await ctx.api(ws, 'GET', '/users/ada%40example.com');
    assert.equal(fetched.statusCode, 200);
    assert.deepEqual(json<'getUser'>(fetched), user);
  });

  test('trims the email and matches it case-insensitively: a second add is 409 user_already_exists', async () => {
    const ws2 = await ctx.createWorkspace();
    assert.equal(json<'addUser'>(await ctx.api(ws2, 'POST', '/users', { body: userBody('  bob@example.com ') })).email, 'bob@example.com');
    const dup = await ctx.api(ws2, 'POST', '/users', { body: userBody('BOB@example.com') });
    assert.equal(dup.statusCode, 409);
    assert.equal(json<'Problem'>(dup).code, 'user_already_exists');
    assert.match(dup.headers['content-type'] as string, /^application\/problem\+json/);
  });

  test('reactivates a deactivated user: 201, role and apps replaced, omitted names kept', async () => {
    const w = await ctx.createWorkspace();
    await ctx.api(w, 'POST', '/users', { body: userBody('carol@example.com', { first_name: 'Carol', last_name: 'C' }) });
    assert.equal((await ctx.api(w, 'DELETE', '/users/carol@example.com')).statusCode, 204);
    const res = await ctx.api(w, 'POST', '/users', {
      body: userBody('Carol@Example.com', { role: 'owner', apps: [{ name: 'helpdesk', role: 'agent' }], last_name: 'New' }),
    });
    assert.equal(res.statusCode, 201);
    const user = json<'addUser'>(res);
    assert.equal(user.email, 'carol@example.com', 'the stored email is kept');
    assert.equal(user.status, 'active');
    assert.equal(user.role, 'owner');
    assert.equal(user.first_name, 'Carol');
    assert.equal(user.last_name, 'New');
    assert.deepEqual(user.apps, [{ name: 'helpdesk', role: 'agent' }]);
  });

  test('null names mean omitted; exact duplicate apps collapse; several roles of one product are kept', async () => {
    const w = await ctx.createWorkspace();
    const res = await ctx.api(w, 'POST', '/users', {
      body: userBody('dan@example.com', {
        first_name: null,
        last_name: null,
        apps: [
          { name: 'crm', role: 'admin' },
          { name: 'crm', role: 'member' },
          { name: 'crm', role: 'admin' },
        ],
      }),
    });
    assert.equal(res.statusCode, 201);
    assert.equal(json<'addUser'>(res).first_name, '-');
    assert.deepEqual(json<'addUser'>(res).apps, [{ name: 'crm', role: 'admin' }, { name: 'crm', role: 'member' }]);
  });

  test('apps may be empty', async () => {
    const w = await ctx.createWorkspace();
    const res = await ctx.api(w, 'POST', '/users', { body: userBody('erin@example.com', { apps: [] }) });
    assert.equal(res.statusCode, 201);
    assert.deepEqual(json<'addUser'>(res).apps, []);
  });

  test('unknown product → 422 unknown_product naming the field; unknown role → 422 unknown_product_role', async () => {
    const w = await ctx.createWorkspace();
    const product = await ctx.api(w, 'POST', '/users', {
      body: userBody('f@example.com', { apps: [{ name: 'crm', role: 'admin' }, { name: 'nope', role: 'x' }] }),
    });
    assert.equal(product.statusCode, 422);
    assert.equal(json<'Problem'>(product).code, 'unknown_product');
    assert.deepEqual(json<'Problem'>(product).errors!.map((e: { field: string }) => e.field), ['user.apps[1].name']);
    const role = await ctx.api(w, 'POST', '/users', {
      body: userBody('f@example.com', { apps: [{ name: 'crm', role: 'owner' }] }),
    });
    assert.equal(role.statusCode, 422);
    assert.equal(json<'Problem'>(role).code, 'unknown_product_role');
    assert.equal(json<'Problem'>(role).errors![0]!.field, 'user.apps[0].role');
    assert.equal((await ctx.api(w, 'GET', '/users/f@example.com')).statusCode, 404, 'nothing was stored');
  });

  test('invalid bodies → 400 validation_failed naming every bad field, nothing stored', async () => {
    const w = await ctx.createWorkspace();
    const res = await ctx.api(w, 'POST', '/users', {
      body: { user: { email: 'not-an-email', role: 'admin', apps: [{ name: 'crm' }], firstName: 'x' }, extra: 1 },
    });
    assert.equal(res.statusCode, 400);
    const problem = json<'Problem'>(res);
    assert.equal(problem.code, 'validation_failed');
    const fields = problem.errors!.map((e: { field: string }) => e.field).sort();
    assert.deepEqual(fields, ['extra', 'user.apps[0].role', 'user.email', 'user.firstName', 'user.role']);
    const missing = await ctx.api(w, 'POST', '/users', { body: { user: {} } });
    assert.deepEqual(
      json<'Problem'>(missing).errors!.map((e: { field: string }) => e.field).sort(),
      ['user.apps', 'user.email', 'user.role'],
    );
    const long = await ctx.api(w, 'POST', '/users', { body: userBody('g@example.com', { first_name: 'x'.repeat(256) }) });
    assert.equal(long.statusCode, 400);
    assert.equal(json<'Problem'>(long).errors![0]!.field, 'user.first_name');
    const list = await ctx.api(w, 'GET', '/users', { query: { status: 'all' } });
    assert.equal(json<'listUsers'>(list).total_count, 0);
  });

  test('the email rule the document declares is the one the service applies: what its pattern accepts is added, what it refuses is 400', async () => {
    const w = await ctx.createWorkspace();
    const document = json<EmailRuleDocument>(await ctx.app.inject({ method: 'GET', url: '/api/external/v2/openapi.json', headers: { host: w.host } }));
    const declared = document.paths['/api/external/v2/users']!.post.requestBody.content['application/json']!.schema.properties.user.properties.email;
    assert.equal(declared.format, undefined, 'no format whose meaning varies between validators');
    const pattern = new RegExp(declared.pattern, 'u');
    const emails = [
      'plain@example.com', ' padded@example.com\t', 'Mixed.Case+tag@Sub.Example.ORG', "o'hara!#$%&*=?^_`{|}~-@example.com",
      'dot..double@example.com', '.lead@example.com', 'no-domain@', 'no-at.example.com', 'tld@localhost', 'ünï@example.com',
      'a@ex_ample.com', 'a@-example.com', 'a b@example.com', 'a@example.com.',
    ];
    for (const [index, email] of emails.entries()) {
      const res = await ctx.api(w, 'POST', '/users', { body: userBody(email, { first_name: `n${index}` }) });
      if (pattern.test(email)) assert.equal(res.statusCode, 201, `${JSON.stringify(email)} matches the pattern: ${res.body}`);
      else {
        assert.equal(res.statusCode, 400, `${JSON.stringify(email)} does not match the pattern: ${res.body}`);
        assert.deepEqual(json<'Problem'>(res).errors, [{ field: 'user.email', message: 'must be a valid email address' }]);
      }
    }
  });

  test('emails over 254 characters are rejected', async () => {
    const w = await ctx.createWorkspace();
    const email = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(60)}.com`;
    assert.ok(email.length > 254);
    const res = await ctx.api(w, 'POST', '/users', { body: userBody(email) });
    assert.equal(res.statusCode, 400);
    assert.equal(json<'Problem'>(res).errors![0]!.field, 'user.email');
  });

  test('media type, size and syntax: 415, 413, 400 malformed_json', async () => {
    const w = await ctx.createWorkspace();
    const text = await ctx.api(w, 'POST', '/users', { body: 'hello', headers: { 'content-type': 'text/plain' } });
    assert.equal(text.statusCode, 415);
    assert.equal(json<'Problem'>(text).code, 'unsupported_media_type');
    const none = await ctx.app.inject({ method: 'POST', url: '/api/external/v2/users', headers: { host: w.host, 'x-api-key': w.apiKey } });
    assert.equal(none.statusCode, 415);
    const big = await ctx.api(w, 'POST', '/users', {
      body: JSON.stringify(userBody('h@example.com', { first_name: 'x'.repeat(70_000) })),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(big.statusCode, 413);
    assert.equal(json<'Problem'>(big).code, 'payload_too_large');
    const broken = await ctx.api(w, 'POST', '/users', { body: '{"user": ', headers: { 'content-type': 'application/json' } });
    assert.equal(broken.statusCode, 400);
    assert.equal(json<'Problem'>(broken).code, 'malformed_json');
    const charset = await ctx.api(w, 'POST', '/users', {
      body: JSON.stringify(userBody('i@example.com')),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    assert.equal(charset.statusCode, 201);
  });

  test('50 concurrent adds of one email: exactly one 201, the rest 409', async () => {
    const w = await ctx.createWorkspace();
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => ctx.api(w, 'POST', '/users', { body: userBody('race@example.com') })),
    );
    const codes = responses.map((r) => r.statusCode).sort();
    assert.equal(codes.filter((c) => c === 201).length, 1);
    assert.equal(codes.filter((c) => c === 409).length, 49);
    const list = await ctx.api(w, 'GET', '/users');
    assert.equal(json<'listUsers'>(list).total_count, 1);
  });
});
