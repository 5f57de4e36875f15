import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ScimError, type ScimList } from '../helpers/json.ts';

/*
 * Emails are ASCII and compared after folding the ASCII letters only (docs/security.md, "One
 * spelling of an email"). PostgreSQL's lower() and JavaScript's toLowerCase() fold more: U+212A
 * KELVIN SIGN becomes "k", U+0130 (capital I with a dot) "i" or "i̇"; NFKC would make
 * fullwidth letters ASCII. None of these spellings may reach the ASCII user they resemble.
 */

/** Spellings of `kate@example.com` and `iris@example.com` that are other mailboxes. */
const LOOKALIKES = [
  { name: 'U+212A KELVIN SIGN', email: '\u212Aate@example.com', of: 'kate@example.com' },
  { name: 'U+0130 capital I with dot above', email: '\u0130ris@example.com', of: 'iris@example.com' },
  { name: 'fullwidth letters', email: '\uFF2BATE@example.com', of: 'kate@example.com' },
  { name: 'U+212A in the domain', email: 'kate@\u212Axample.com', of: 'kate@kxample.com' },
] as const;

describe(`one spelling of an email: ASCII folding only [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;

  const path = (email: string) => `/users/${encodeURIComponent(email)}`;
  const scim = (method: 'GET' | 'POST', url: string, body?: unknown) =>
    ctx.app.inject({
      method,
      url: `/scim/v2${url}`,
      headers: { host: ws.host, authorization: `Bearer ${ws.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const assertNotFound = (res: LightMyRequestResponse, what: string) => {
    assert.equal(res.statusCode, 404, `${what}: ${res.body}`);
    assert.equal(json<'Problem'>(res).code, 'user_not_found', what);
  };

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('email-fold');
    for (const email of ['kate@example.com', 'iris@example.com', 'kate@kxample.com']) {
      const res = await ctx.api(ws, 'POST', '/users', { body: userBody(email, { role: 'owner' }) });
      assert.equal(res.statusCode, 201, res.body);
    }
  });
  after(() => ctx.close());

  test('ASCII letter case still does not matter', async () => {
    const found = await ctx.api(ws, 'GET', path('KATE@Example.COM'));
    assert.equal(found.statusCode, 200, found.body);
    assert.equal(json<'getUser'>(found).email, 'kate@example.com');
    const taken = await ctx.api(ws, 'POST', '/users', { body: userBody('Kate@EXAMPLE.com') });
    assert.equal(taken.statusCode, 409);
    assert.equal(json<'Problem'>(taken).code, 'user_already_exists');
  });

  for (const { name, email, of } of LOOKALIKES) {
    test(`${name}: GET, PATCH and DELETE /users/{email} find nobody; ${of} is unchanged`, async () => {
      assertNotFound(await ctx.api(ws, 'GET', path(email)), 'GET');
      assertNotFound(await ctx.api(ws, 'GET', `${path(email)}/audit-events`), 'GET audit-events');
      assertNotFound(await ctx.api(ws, 'PATCH', path(email), { body: { user: { first_name: 'Mallory' } } }), 'PATCH');
      assertNotFound(await ctx.api(ws, 'DELETE', path(email)), 'DELETE');
      const original = await ctx.api(ws, 'GET', path(of));
      assert.equal(original.statusCode, 200);
      assert.equal(json<'getUser'>(original).status, 'active');
      assert.equal(json<'getUser'>(original).first_name, '-');
    });

    test(`${name}: refused as a new user or a new email (400 naming user.email), never a second ${of}`, async () => {
      const added = await ctx.api(ws, 'POST', '/users', { body: userBody(email) });
      assert.equal(added.statusCode, 400, added.body);
      assert.equal(json<'Problem'>(added).code, 'validation_failed');
      assert.deepEqual(json<'Problem'>(added).errors!.map((e: { field: string }) => e.field), ['user.email']);
      const renamed = await ctx.api(ws, 'PATCH', path(of), { body: { user: { email } } });
      assert.equal(renamed.statusCode, 400, renamed.body);
      assert.deepEqual(json<'Problem'>(renamed).errors!.map((e: { field: string }) => e.field), ['user.email']);
      const viaScim = await scim('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email });
      assert.equal(viaScim.statusCode, 400, viaScim.body);
      assert.equal(json<ScimError>(viaScim).scimType, 'invalidValue');
      const listed = await ctx.api(ws, 'GET', '/users', { query: { page_size: '100' } });
      assert.deepEqual(json<'listUsers'>(listed).users.map((u: { email: string }) => u.email).sort(), ['iris@example.com', 'kate@example.com', 'kate@kxample.com']);
    });

    test(`${name}: SCIM userName eq, sw and co, and the native q, match nobody`, async () => {
      // The shortest prefix holding the lookalike character, and that character with its neighbours.
      const at = [...email].findIndex((c) => c.charCodeAt(0) > 0x7e);
      const prefix = email.slice(0, at + 1);
      const fragment = email.slice(Math.max(0, at - 1), at + 3);
      for (const filter of [`userName eq "${email}"`, `userName sw "${prefix}"`, `userName co "${fragment}"`, `emails.value eq "${email}"`]) {
        const res = await scim('GET', `/Users?filter=${encodeURIComponent(filter)}`);
        assert.equal(res.statusCode, 200, `${filter}: ${res.body}`);
        assert.equal(json<ScimList>(res).totalResults, 0, filter);
      }
      const ascii = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${of.toUpperCase()}"`)}`);
      assert.equal(json<ScimList>(ascii).totalResults, 1, 'the ASCII spelling in another case does');
      const q = await ctx.api(ws, 'GET', '/users', { query: { q: prefix } });
      assert.equal(q.statusCode, 200);
      assert.equal(json<'listUsers'>(q).total_count, 0);
    });
  }
});
