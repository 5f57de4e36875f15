import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { LightMyRequestResponse } from 'fastify';
import { lintOpenApiDocument } from '../../scripts/lint-openapi.ts';
import { json, type ScimError, type ScimGroup, type ScimList } from '../helpers/json.ts';
import { SCIM_PATCH_OP, SCIM_USER, SCIM_WUM, scimRequest } from '../helpers/scim-request.ts';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';

/*
 * The SCIM service's own OpenAPI document (docs/api.md, "SCIM 2.0 provisioning"): public on
 * every host, clean under Redocly's rules, and true: every answer below has a status the
 * document declares for its path and method, and a body its schema accepts (Ajv, JSON Schema
 * 2020-12); every request body is one the document's request schema accepts.
 */

const DOCUMENT = '/scim/v2/openapi.json';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

type Media = { schema: object };
type Operation = { requestBody?: { content: Record<string, Media> }; responses: Record<string, { content?: Record<string, Media> }> };
type Document = {
  openapi: string;
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, object> };
};

describe(`the SCIM OpenAPI document [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let document: Document;
  let ajv: Ajv2020.default;
  const checked = new Set<string>();

  /** Asserts `value` is valid against `schema`, a schema of the document (its references resolved in it). */
  function assertValid(schema: object, value: unknown, label: string): void {
    const validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"scim-openapi#/components/')) as object);
    assert.ok(validate(value), `${label}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
  }

  /** The operation of the document at `method` and `template`. */
  function operationAt(method: string, template: string): Operation {
    const operation = document.paths[template]?.[method.toLowerCase()];
    assert.ok(operation, `${method} ${template} is in the document`);
    return operation;
  }

  /** Asserts the answer `res` to `method template` has a status the document declares there, and a body its schema accepts. */
  function assertDeclared(method: string, template: string, res: LightMyRequestResponse): void {
    const label = `${method} ${res.raw.req.url} → ${res.statusCode}`;
    const responses = operationAt(method, template).responses;
    const response = responses[String(res.statusCode)];
    assert.ok(response, `${label} is declared (${Object.keys(responses).join(', ')}): ${res.body}`);
    if (res.statusCode === 204) {
      assert.equal(response.content, undefined, `${label} declares no body`);
      assert.equal(res.body, '');
    } else {
      const type = String(res.headers['content-type']).split(';', 1)[0]!;
      const media = response.content?.[type];
      assert.ok(media, `${label} declares ${type}`);
      assertValid(media.schema, res.json(), label);
    }
    checked.add(`${method} ${template} ${res.statusCode}`);
  }

  /**
   * Sends a SCIM request as `template` (a path of the document) with `path` filled in, checks its
   * body against the declared request schema, and its answer against the declared response.
   */
  async function call(method: string, template: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    if (body !== undefined) {
      const media = operationAt(method, template).requestBody?.content['application/scim+json'];
      assert.ok(media, `${method} ${template} declares an application/scim+json body`);
      assertValid(media.schema, body, `${method} ${template} request`);
    }
    const res = await scimRequest(ctx.app, ws, method, path, body, headers);
    assertDeclared(method, template, res);
    return res;
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('scim-doc');
    // An owner besides the users SCIM creates, so deleting them is no last-owner refusal.
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('owner@example.com', { role: 'owner' }) })).statusCode, 201);
    const res = await ctx.app.inject({ method: 'GET', url: DOCUMENT, headers: { host: ws.host } });
    document = json<Document>(res);
    ajv = new Ajv2020.default({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ $id: 'scim-openapi', components: document.components });
  });
  after(() => ctx.close());

  test('is served without a key on a workspace host, on an unknown workspace host and on the operator host, with a bad key too', async () => {
    const hosts = [ws.host, 'nobody-here.localhost:3000', 'localhost:3000', '127.0.0.1:3000'];
    for (const host of hosts) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }, { 'x-api-key': 'wrong' }]) {
        const res = await ctx.app.inject({ method: 'GET', url: DOCUMENT, headers: { host, ...headers } });
        assert.equal(res.statusCode, 200, `${host} ${JSON.stringify(headers)}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.deepEqual(res.json(), document);
      }
    }
    assert.equal(document.openapi, '3.1.0');
    assert.deepEqual(document.servers.map((s) => s.url), [`http://{workspace}.${ctx.config.baseDomain}:${ctx.config.port}/scim/v2`]);
    const refused = await ctx.app.inject({ method: 'DELETE', url: DOCUMENT, headers: { host: ws.host } });
    assert.equal(refused.statusCode, 405);
    // The rest of the SCIM service still needs the key.
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { host: ws.host } })).statusCode, 401);
  });

  test('the main document points at it', async () => {
    const main = json<{ info: { description: string } }>(await ctx.app.inject({ method: 'GET', url: `${API}/openapi.json`, headers: { host: ws.host } }));
    assert.match(main.info.description, /\/scim\/v2\/openapi\.json/);
  });

  // Redocly runs on the document alone (no database): once, in the PGlite run.
  if (BACKEND === 'pglite') {
    test("passes `redocly lint` with redocly.yaml, but for the problem+json rule (SCIM's errors are its own, RFC 7644 §3.12)", () => {
      const result = lintOpenApiDocument(structuredClone(document), { rules: { 'operation-4xx-problem-details-rfc7807': 'off' } });
      assert.equal(result.status, 0, result.output);
      assert.doesNotMatch(result.output, /You have \d+ warnings?/, result.output);
    });
  }

  test('users: create, read, list, patch, replace, delete, as declared', async () => {
    const created = await call('POST', '/Users', '/Users', {
      schemas: [SCIM_USER, SCIM_WUM],
      userName: 'grace@example.com',
      externalId: 'okta-grace',
      name: { givenName: 'Grace', familyName: 'Hopper', formatted: 'Grace Hopper' },
      displayName: 'Grace H.',
      emails: [{ value: 'grace@example.com', type: 'work', primary: true }, { value: 'grace@home.example', type: 'home' }],
      phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
      roles: [{ value: 'crm:admin' }],
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Navy', manager: { value: 'someone' } },
      [SCIM_WUM]: { workspaceRole: 'non_owner' },
    });
    assert.equal(created.statusCode, 201);
    const id = json<{ id: string }>(created).id;
    assert.equal((await call('GET', '/Users/{id}', `/Users/${id}`)).statusCode, 200);
    assert.equal((await call('GET', '/Users/{id}', `/Users/${id}?attributes=userName`)).statusCode, 200);
    assert.equal((await call('GET', '/Users', `/Users?filter=${encodeURIComponent('userName eq "grace@example.com"')}&startIndex=1&count=10`)).statusCode, 200);
    assert.equal((await call('GET', '/Users', '/Users?excludedAttributes=emails')).statusCode, 200);
    const patched = await call('PATCH', '/Users/{id}', `/Users/${id}`, {
      schemas: [SCIM_PATCH_OP],
      Operations: [{ op: 'Replace', path: 'active', value: false }, { op: 'add', value: { title: 'Rear Admiral' } }],
    });
    assert.equal(patched.statusCode, 200);
    const replaced = await call('PUT', '/Users/{id}', `/Users/${id}`, { schemas: [SCIM_USER], userName: 'grace@example.com', active: true }, {
      'if-match': String(patched.headers.etag),
    });
    assert.equal(replaced.statusCode, 200);
    assert.equal((await call('DELETE', '/Users/{id}', `/Users/${id}`)).statusCode, 204);
    assert.equal((await call('GET', '/Users/{id}', `/Users/${id}`)).statusCode, 404);
  });

  test('groups: link, read, list, patch (204 and 200), replace, unlink, as declared', async () => {
    const member = json<{ id: string }>(await call('POST', '/Users', '/Users', { schemas: [SCIM_USER], userName: 'alan@example.com' })).id;
    const created = await call('POST', '/Groups', '/Groups', { schemas: [GROUP], displayName: 'crm:member', externalId: 'okta-g1', members: [{ value: member }] });
    assert.equal(created.statusCode, 201);
    const id = json<ScimGroup>(created).id;
    assert.equal((await call('GET', '/Groups/{id}', `/Groups/${id}`)).statusCode, 200);
    assert.equal((await call('GET', '/Groups', `/Groups?filter=${encodeURIComponent('displayName eq "crm:member"')}`)).statusCode, 200);
    const remove = { schemas: [SCIM_PATCH_OP], Operations: [{ op: 'remove', path: `members[value eq "${member}"]` }] };
    assert.equal((await call('PATCH', '/Groups/{id}', `/Groups/${id}`, remove)).statusCode, 204);
    const add = { schemas: [SCIM_PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: member }] }] };
    assert.equal((await call('PATCH', '/Groups/{id}', `/Groups/${id}?excludedAttributes=externalId`, add)).statusCode, 200);
    assert.equal((await call('PUT', '/Groups/{id}', `/Groups/${id}`, { schemas: [GROUP], displayName: 'crm:member', members: [] })).statusCode, 200);
    assert.equal((await call('DELETE', '/Groups/{id}', `/Groups/${id}`)).statusCode, 204);
    assert.equal((await call('GET', '/Groups/{id}', `/Groups/${id}`)).statusCode, 404);
  });

  test('errors: 400 invalidFilter and invalidValue, 401, 404, 409 uniqueness, 412, 415, as declared SCIM errors', async () => {
    const scimType = (res: LightMyRequestResponse) => json<ScimError>(res).scimType;
    const filter = await call('GET', '/Users', `/Users?filter=${encodeURIComponent('userName eq')}`);
    assert.deepEqual([filter.statusCode, scimType(filter)], [400, 'invalidFilter']);
    const count = await call('GET', '/Users', '/Users?count=many');
    assert.deepEqual([count.statusCode, scimType(count)], [400, 'invalidValue']);
    assert.equal((await call('GET', '/Users', '/Users', undefined, { authorization: 'Bearer nope' })).statusCode, 401);
    assert.equal((await call('GET', '/Users/{id}', '/Users/6f1c2a3e-0000-4000-8000-00000000dead')).statusCode, 404);
    const user = { schemas: [SCIM_USER], userName: 'twice@example.com' };
    const first = await call('POST', '/Users', '/Users', user);
    const again = await call('POST', '/Users', '/Users', user);
    assert.deepEqual([again.statusCode, scimType(again)], [409, 'uniqueness']);
    const group = { schemas: [GROUP], displayName: 'helpdesk:agent' };
    assert.equal((await call('POST', '/Groups', '/Groups', group)).statusCode, 201);
    const linked = await call('POST', '/Groups', '/Groups', group);
    assert.deepEqual([linked.statusCode, scimType(linked)], [409, 'uniqueness']);
    const stale = await call('DELETE', '/Users/{id}', `/Users/${json<{ id: string }>(first).id}`, undefined, { 'if-match': '"99"' });
    assert.equal(stale.statusCode, 412);
    const untyped = await ctx.app.inject({ method: 'POST', url: '/scim/v2/Users', headers: { host: ws.host, authorization: `Bearer ${ws.apiKey}`, 'content-type': 'text/plain' }, payload: 'x' });
    assert.equal(untyped.statusCode, 415);
    assertDeclared('POST', '/Users', untyped);
  });

  test('discovery: the service provider configuration, resource types and schemas, as declared', async () => {
    assert.equal((await call('GET', '/ServiceProviderConfig', '/ServiceProviderConfig')).statusCode, 200);
    const types = json<ScimList>(await call('GET', '/ResourceTypes', '/ResourceTypes')).Resources;
    for (const type of types) assert.equal((await call('GET', '/ResourceTypes/{id}', `/ResourceTypes/${type.id}`)).statusCode, 200);
    assert.equal((await call('GET', '/ResourceTypes/{id}', '/ResourceTypes/Printer')).statusCode, 404);
    const schemas = json<ScimList>(await call('GET', '/Schemas', '/Schemas')).Resources;
    assert.equal(schemas.length, 4);
    for (const schema of schemas) assert.equal((await call('GET', '/Schemas/{id}', `/Schemas/${schema.id}`)).statusCode, 200);
    assert.equal((await call('GET', '/Schemas/{id}', '/Schemas/urn:example:nothing')).statusCode, 404);
  });

  test('every operation of the document was exercised above', () => {
    const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    const exercised = new Set([...checked].map((c) => c.split(' ').slice(0, 2).join(' ')));
    assert.deepEqual(operations.filter((o) => !exercised.has(o)), []);
  });
});
