import assert from 'node:assert/strict';
import { normaliseTarget } from '../../src/http/request-target.ts';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ScimError, type ScimGroup } from '../helpers/json.ts';

/*
 * Fuzzing (docs/security.md; OWASP API4, API8): fast-check properties over bodies, query strings,
 * headers, paths and methods against the in-process app. For every generated request:
 *   - never a 5xx;
 *   - every error is problem+json with a `code` and the HTTP status in `status`;
 *   - a rejected request (4xx) changes nothing stored: users, their apps, the audit trail,
 *     workspaces, keys and products fingerprint the same before and after.
 * Runs are bounded (RUNS per property) so the file takes seconds; WUM_FUZZ_RUNS raises it for a
 * longer hunt. A failure prints the seed and the shrunk request, to replay with
 * `fc.assert(..., { seed, path })`. Found so far: an invalid Host (`]`) made the admin listings'
 * Link header throw (500) — now refused up front with 400 (http-limits.ts, refuseInvalidHost).
 */

const RUNS = Number(process.env.WUM_FUZZ_RUNS) || 150;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Printable ASCII, the alphabet a header value may carry; plus a few hostile favourites. */
const printable = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    fc.constantFrom('%', '%00', '%zz', '\\', '"', "'", '..', '/', '\t', '{', '}', '$', ';'),
  ),
  maxLength: 80,
});
/** Any text, non-BMP and control characters included (bodies, query values, paths). */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.constantFrom('', ' ', '\u0000', 'null', '-1', '0', '1e309', '99999999999999999999', 'NaN', '<script>', '😀', 'a'.repeat(300)),
);
const productNames = fc.oneof(fc.constantFrom('crm', 'analytics', 'helpdesk'), anyText);
const roleNames = fc.oneof(fc.constantFrom('admin', 'member', 'viewer', 'agent', 'owner'), anyText);

/** Near-valid `POST /users` bodies: the right shape with any field wrong, missing or extra. */
const userBodies = fc.oneof(
  fc.record(
    {
      user: fc.record(
        {
          email: fc.oneof(fc.emailAddress(), anyText, fc.integer(), fc.constant(null)),
          role: fc.oneof(fc.constantFrom('owner', 'non_owner'), anyText, fc.boolean()),
          first_name: fc.oneof(anyText, fc.constant(null), fc.integer()),
          last_name: fc.oneof(anyText, fc.constant(null)),
          apps: fc.oneof(
            fc.array(fc.record({ name: productNames, role: roleNames }, { requiredKeys: [] }), { maxLength: 4 }),
            fc.jsonValue({ maxDepth: 2 }),
          ),
          extra: fc.jsonValue({ maxDepth: 2 }),
        },
        { requiredKeys: [] },
      ),
      other: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue({ maxDepth: 3 }),
);

describe(`fuzzing [${BACKEND}]`, () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let ws: TestWorkspace;
  let endpointId: string;

  /** A fingerprint of everything a request could change (not `last_used_at`, which reads touch). */
  async function storedState(): Promise<string> {
    const result = (await ctx.database.db.execute(sql`
      select
        (select count(*) from audit_events)::text as audit,
        (select count(*) from events)::text as events,
        (select md5(coalesce(string_agg(concat_ws('|', workspace_id, id, public_id, email, role, first_name, last_name, status, external_id, scim_attributes, scim_deleted, version, updated_at), ',' order by workspace_id, id), '')) from users) as users,
        (select md5(coalesce(string_agg(concat_ws('|', workspace_id, user_id, product, role, position), ',' order by workspace_id, user_id, product, role), '')) from user_apps) as apps,
        (select md5(coalesce(string_agg(concat_ws('|', id, subdomain, name), ',' order by id), '')) from workspaces) as workspaces,
        (select md5(coalesce(string_agg(concat_ws('|', workspace_id, id, key_hash, revoked_at), ',' order by workspace_id, id), '')) from api_keys) as keys,
        (select md5(coalesce(string_agg(concat_ws('|', name, array_to_string(roles, ','), updated_at), ',' order by name), '')) from products) as products,
        (select md5(coalesce(string_agg(concat_ws('|', workspace_id, id, product, role, external_id, updated_at), ',' order by workspace_id, id), '')) from scim_groups) as groups,
        (select md5(coalesce(string_agg(concat_ws('|', workspace_id, id, url, description, array_to_string(event_types, ','), secret, enabled, updated_at), ',' order by workspace_id, id), '')) from webhook_endpoints) as endpoints,
        (select md5(coalesce(string_agg(concat_ws('|', workspace_id, id, status, attempts, next_attempt_at), ',' order by workspace_id, id), '')) from webhook_deliveries) as deliveries
    `)) as unknown as { rows: unknown[] };
    return JSON.stringify(result.rows[0]);
  }

  function assertWellFormed(res: LightMyRequestResponse, request: InjectOptions): void {
    const what = `${request.method} ${String(request.url).slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
    assert.ok(res.statusCode < 500, `never a 5xx: ${what}`);
    if (res.statusCode < 400) return;
    // The path as the server resolves it (`/scim/v2/..` is `/`, `/%73cim/v2` is SCIM). `inject`
    // first parses the URL as a WHATWG URL, which resolves dot segments its own way
    // (`/scim/v2//..` reaches the server as `/scim/v2/`), so the oracle does the same.
    const target = String(request.url);
    const sent = new URL(target.startsWith('//') ? `http://localhost${target}` : target, 'http://localhost');
    const resolved = normaliseTarget(sent.pathname).url;
    if (/^\/scim\/v2(\/|$)/i.test(resolved)) {
      // SCIM errors are SCIM error bodies (RFC 7644 §3.12), not problem details.
      assert.match(String(res.headers['content-type']), /^application\/scim\+json/, `scim+json: ${what}`);
      assert.ok(res.headers['x-request-id'], `X-Request-Id: ${what}`);
      if (request.method === 'HEAD') return;
      const error = json<ScimError>(res.body);
      assert.deepEqual(error.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error'], what);
      assert.equal(error.status, String(res.statusCode), what);
      assert.equal(typeof error.detail, 'string', what);
      if (res.statusCode === 400) assert.match(error.scimType ?? '', /^[a-zA-Z]+$/, `a 400 has its scimType: ${what}`);
      return;
    }
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `problem+json: ${what}`);
    assert.ok(res.headers['x-request-id'], `X-Request-Id: ${what}`);
    if (request.method === 'HEAD') return;
    const problem = json<'Problem'>(res.body);
    assert.equal(typeof problem.code, 'string', what);
    assert.match(problem.code, /^[a-z_]+$/, what);
    assert.equal(problem.status, res.statusCode, what);
    assert.equal(typeof problem.type, 'string', what);
    assert.equal(typeof problem.title, 'string', what);
  }

  /** Sends `request`; checks the answer, and that a refusal left the stored state as it was. */
  async function exchange(request: InjectOptions): Promise<LightMyRequestResponse> {
    // Let the event loop turn between runs, as it does between requests read from sockets:
    // back-to-back injects into in-process PGlite are one long chain of microtasks, which
    // starves timers for seconds, and load shedding rightly reads that as a stalled loop.
    await new Promise((resolve) => setImmediate(resolve));
    const before = await storedState();
    let res: LightMyRequestResponse;
    try {
      res = await app.inject(request);
    } catch (error) {
      // light-my-request cannot represent some targets (e.g. `/\`: "Invalid URL") and never
      // sends them; over a socket they are answered (400 or 404). Skip those runs.
      fc.pre(!(error instanceof TypeError && /Invalid URL/.test(error.message)));
      throw error;
    }
    assertWellFormed(res, request);
    if (res.statusCode >= 400) assert.equal(await storedState(), before, `a refused request changed nothing: ${request.method} ${request.url}`);
    return res;
  }

  const remoteAddress = fc.ipV4();

  before(async () => {
    // Webhook endpoints point at the discard port of loopback (nothing runs a worker here).
    ctx = await createTestContext({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' });
    // The per-key bucket would turn later runs into 429s; limits have their own tests. Failed
    // key attempts stay limited (per address, and each run comes from a random address).
    app = await ctx.buildApp({ RATE_LIMIT_PER_KEY: '0' });
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('fuzz');
    for (const email of ['owner@example.com', 'member@example.com']) {
      const role = email.startsWith('owner') ? 'owner' : 'non_owner';
      assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(email, { role }) })).statusCode, 201);
    }
    const endpoint = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: 'https://127.0.0.1:9/hook' });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    endpointId = json<'createWebhookEndpoint'>(endpoint).id;
  });
  after(() => ctx.close());

  test('bodies: POST /users with any JSON, near-valid or not, and any text as JSON', async () => {
    const bodies = fc.oneof(
      userBodies.map((body) => JSON.stringify(body)),
      anyText,
      fc.constantFrom('{', '{"user":', '[]', '""', '{"user": {"email": "a@b.c", "role": "owner", "apps": []}}}', '\u0000'),
    );
    await fc.assert(
      fc.asyncProperty(bodies, fc.option(printable.map((k) => k.slice(0, 255)), { nil: undefined }), remoteAddress, async (payload, idempotencyKey, address) => {
        await exchange({
          method: 'POST',
          url: `${API}/users`,
          headers: {
            host: ws.host,
            'x-api-key': ws.apiKey,
            'content-type': 'application/json',
            ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
          },
          payload,
          remoteAddress: address,
        });
      }),
      { numRuns: RUNS },
    );
  });

  test('bodies: PATCH /users/{email} with any JSON, any If-Match and either JSON media type', async () => {
    const patchBodies = fc.oneof(
      fc.record(
        {
          user: fc.record(
            {
              email: fc.oneof(fc.emailAddress(), fc.constant('owner@example.com'), anyText, fc.integer(), fc.constant(null)),
              role: fc.oneof(fc.constantFrom('owner', 'non_owner'), anyText, fc.constant(null)),
              first_name: fc.oneof(anyText, fc.constant(null), fc.integer()),
              last_name: fc.oneof(anyText, fc.constant(null)),
              status: fc.oneof(fc.constantFrom('active', 'deactivated'), anyText, fc.boolean()),
              apps: fc.oneof(
                fc.array(fc.record({ name: productNames, role: roleNames }, { requiredKeys: [] }), { maxLength: 4 }),
                fc.jsonValue({ maxDepth: 2 }),
              ),
              extra: fc.jsonValue({ maxDepth: 2 }),
            },
            { requiredKeys: [] },
          ),
        },
        { requiredKeys: [] },
      ).map((body) => JSON.stringify(body)),
      anyText,
      fc.constantFrom('{', '[]', 'null', '{"user": null}', '{"user": []}'),
    );
    const ifMatch = fc.oneof(fc.constantFrom('*', '"1"', 'W/"1"', '"999"', '"1", "2"', '', ','), printable);
    // Not the owner: a valid rename would take away the address the last test reads.
    const targets = fc.constantFrom('member@example.com', 'MEMBER@example.com', 'nobody@example.com', '%zz', '..');
    const mediaTypes = fc.constantFrom('application/json', 'application/merge-patch+json', 'application/merge-patch+json; charset=utf-8');
    await fc.assert(
      fc.asyncProperty(targets, patchBodies, fc.option(ifMatch, { nil: undefined }), mediaTypes, remoteAddress, async (target, payload, match, type, address) => {
        await exchange({
          method: 'PATCH',
          url: `${API}/users/${target}`,
          headers: {
            host: ws.host,
            'x-api-key': ws.apiKey,
            'content-type': type,
            ...(match === undefined || /[\r\n\0]/.test(match) ? {} : { 'if-match': match }),
          },
          payload,
          remoteAddress: address,
        });
      }),
      { numRuns: RUNS },
    );
  });

  test('bodies: admin PUT /products/{name} and POST /workspaces with any JSON', async () => {
    const targets = fc.oneof(
      fc.record({ method: fc.constant('PUT' as const), url: productNames.map((n) => `/admin/v1/products/${encodeURIComponent(n)}`) }),
      fc.constant({ method: 'POST' as const, url: '/admin/v1/workspaces' }),
    );
    const bodies = fc.oneof(
      fc.record({ roles: fc.oneof(fc.array(roleNames, { maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })) }, { requiredKeys: [] }),
      fc.record({ subdomain: fc.oneof(anyText, fc.stringMatching(/^[a-z0-9-]{1,70}$/)), name: fc.oneof(anyText, fc.integer()) }, { requiredKeys: [] }),
      fc.jsonValue({ maxDepth: 3 }),
    );
    await fc.assert(
      fc.asyncProperty(targets, bodies, async (target, body) => {
        await exchange({
          ...target,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
      }),
      { numRuns: RUNS },
    );
  });

  test('bodies: admin POST and PATCH of webhook endpoints with any JSON', async () => {
    const targets = fc.constantFrom(
      { method: 'POST' as const, url: () => `/admin/v1/workspaces/${ws.subdomain}/webhook-endpoints` },
      { method: 'PATCH' as const, url: () => `/admin/v1/workspaces/${ws.subdomain}/webhook-endpoints/${endpointId}` },
    );
    // Literal addresses, so no run waits for DNS; names that do not parse as URLs fail before it.
    const urls = fc.oneof(
      fc.constantFrom('https://192.0.2.1/h', 'https://10.0.0.1/', 'http://127.0.0.1:9/', 'https://[::1]/', 'https://169.254.169.254/', 'ftp://1.2.3.4/', 'https://u:p@127.0.0.1:9/', ''),
      anyText,
      fc.integer(),
    );
    const eventTypes = fc.oneof(fc.constant(null), fc.array(fc.oneof(fc.constantFrom('user.created', 'user.updated', 'user.deactivated', 'user.reactivated'), anyText), { maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }));
    const bodies = fc.oneof(
      fc.record({ url: urls, description: fc.oneof(anyText, fc.integer()), event_types: eventTypes, enabled: fc.oneof(fc.boolean(), anyText) }, { requiredKeys: [] }),
      fc.jsonValue({ maxDepth: 3 }),
    );
    await fc.assert(
      fc.asyncProperty(targets, bodies, async (target, body) => {
        await exchange({
          method: target.method,
          url: target.url(),
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
      }),
      { numRuns: RUNS },
    );
  });

  test('query strings: any parameters on every listing, encoded or raw', async () => {
    const listings = fc.constantFrom(
      { url: `${API}/users`, external: true },
      { url: `${API}/products`, external: true },
      { url: '/admin/v1/workspaces', external: false },
      { url: '/admin/v1/audit-events', external: false },
      { url: `/admin/v1/workspaces/${'{ws}'}/audit-events`, external: false },
      { url: `${API}/events`, external: true },
      { url: `/admin/v1/workspaces/${'{ws}'}/webhook-endpoints/${'{ep}'}/deliveries`, external: false },
    );
    const names = fc.oneof(
      fc.constantFrom('status', 'page_number', 'page_size', 'q', 'role', 'app', 'sort', 'action', 'actor_type', 'target_id', 'workspace', 'after', 'limit', 'status[]', 'page_size[0]', '__proto__', 'constructor'),
      anyText,
    );
    const values = fc.oneof(
      fc.constantFrom('active', 'deactivated', 'all', '1', '100', '101', '0', '-1', '2147483647', '2147483648', '1.5', '1e2', '0x10', ' 7', ''),
      fc.constantFrom('owner', 'non_owner', 'crm', 'crm:admin', 'crm:', ':admin', 'email', '-email', '-created_at', '%', '_', '\\', "o'brien", 'user.updated', 'api_key'),
      anyText,
    );
    const encoded = fc.array(fc.tuple(names, values), { maxLength: 5 }).map((pairs) => new URLSearchParams(pairs).toString());
    const raw = printable.map((s) => s.replaceAll('#', ''));
    await fc.assert(
      fc.asyncProperty(listings, fc.oneof(encoded, raw), remoteAddress, async (listing, query, address) => {
        const url = `${listing.url.replace('{ws}', ws.subdomain).replace('{ep}', endpointId)}?${query}`;
        const headers: Record<string, string> = listing.external
          ? { host: ws.host, 'x-api-key': ws.apiKey }
          : { authorization: `Bearer ${ADMIN_TOKEN}` };
        const res = await exchange({ method: 'GET', url, headers, remoteAddress: address });
        assert.ok([200, 400].includes(res.statusCode), `${url} → ${res.statusCode} ${res.body.slice(0, 200)}`);
      }),
      { numRuns: RUNS },
    );
  });

  test('headers: any Host, key, content type, idempotency key, request id and other headers', async () => {
    const targets = fc.constantFrom(
      { method: 'GET' as const, url: `${API}/users` },
      { method: 'POST' as const, url: `${API}/users` },
      { method: 'GET' as const, url: `${API}/users/member@example.com` },
      { method: 'DELETE' as const, url: `${API}/users/nobody@example.com` },
      { method: 'GET' as const, url: `${API}/products` },
      { method: 'GET' as const, url: '/admin/v1/workspaces' },
    );
    const headerValue = (valid: string) => fc.oneof(fc.constant(valid), printable);
    const headerSets = fc.record(
      {
        host: fc.oneof(fc.constant(ws.host), fc.constant(ws.host.toUpperCase()), printable.map((s) => s.replace(/[\s/\\?#@]/g, '') || 'x')),
        'x-api-key': headerValue(ws.apiKey),
        authorization: fc.oneof(fc.constant(`Bearer ${ADMIN_TOKEN}`), printable),
        'content-type': fc.oneof(fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/problem+json', ''), printable),
        'idempotency-key': fc.oneof(printable, fc.string({ minLength: 250, maxLength: 300 })),
        'x-request-id': printable,
        'x-forwarded-host': printable,
        'x-forwarded-for': printable,
        accept: printable,
        'accept-encoding': fc.constantFrom('gzip', 'br', 'identity', '*', 'x'),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(targets, headerSets, fc.boolean(), remoteAddress, async (target, headers, withBody, address) => {
        const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => !/[\r\n\0]/.test(v)));
        await exchange({
          ...target,
          headers: clean,
          ...(withBody ? { payload: JSON.stringify(userBody(`hdr-${Math.random()}@example.com`)) } : {}),
          remoteAddress: address,
        });
      }),
      { numRuns: RUNS },
    );
  });

  test('hostile generators: deep nesting, lone surrogates, huge integers and percent-encoded paths', async () => {
    const deepJson = fc.tuple(fc.integer({ min: 60, max: 5000 }), fc.constantFrom('[', '{"a":')).map(([depth, open]) => {
      const close = open === '[' ? ']' : '}';
      return `{"user": ${open.repeat(depth)}1${close.repeat(depth)}}`;
    });
    const loneSurrogate = fc
      .tuple(fc.integer({ min: 0xd800, max: 0xdfff }), anyText, fc.constantFrom('email', 'first_name', 'last_name', 'role'))
      .map(([unit, text, field]) => JSON.stringify(userBody('surrogate@example.com')).replace(`"${field}":"`, `"${field}":"${text.replace(/["\\]/g, '')}\\u${unit.toString(16)}`));
    const hugeInteger = fc.oneof(
      fc.bigInt({ min: 2n ** 53n - 2n, max: 2n ** 70n }).map(String),
      fc.constantFrom('9223372036854775807', '9223372036854775808', '-9223372036854775809', '1e20', '1e309', '9007199254740993', '0x10', '-0'),
    );
    const encodePath = (path: string, picks: readonly boolean[]) =>
      path.replace(/[a-z]/g, (c, i: number) => (picks[i % picks.length] ? `%${c.charCodeAt(0).toString(16)}` : c));
    const paths = fc.constantFrom(`${API}/users`, `${API}/products`, `${API}/events`, '/scim/v2/Users', '/scim/v2/Groups', '/admin/v1/workspaces');
    const requests = fc.oneof(
      deepJson.map((payload) => ({ method: 'POST' as const, url: `${API}/users`, headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'application/json' }, payload })),
      deepJson.map((payload) => ({ method: 'POST' as const, url: '/scim/v2/Users', headers: { host: ws.host, authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/scim+json' }, payload })),
      loneSurrogate.map((payload) => ({ method: 'POST' as const, url: `${API}/users`, headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'application/json' }, payload })),
      fc.tuple(hugeInteger, fc.constantFrom('after', 'limit', 'page_number', 'page_size')).map(([value, name]) => ({
        method: 'GET' as const,
        url: `${API}/${name === 'after' || name === 'limit' ? 'events' : 'users'}?${name}=${encodeURIComponent(value)}`,
        headers: { host: ws.host, 'x-api-key': ws.apiKey },
      })),
      fc.tuple(paths, fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), fc.boolean(), fc.constantFrom('GET', 'POST', 'DELETE')).map(([path, picks, withKey, method]) => ({
        method: method as 'GET' | 'POST' | 'DELETE',
        url: encodePath(path, picks),
        headers: { host: ws.host, ...(withKey ? { 'x-api-key': ws.apiKey, authorization: `Bearer ${ws.apiKey}` } : {}) },
      })),
    );
    await fc.assert(
      fc.asyncProperty(requests, remoteAddress, async (request, address) => {
        const res = await exchange({ ...request, remoteAddress: address });
        if (!('x-api-key' in request.headers) && !('authorization' in request.headers)) assert.ok(res.statusCode >= 400, `no 2xx without a key: ${request.url}`);
      }),
      { numRuns: RUNS },
    );
  });

  test('paths and methods: any method on any path under every prefix, with valid credentials', async () => {
    const prefixes = fc.constantFrom('', '/', API, `${API}/`, `${API}/users/`, `${API}/products/`, '/admin/v1/', '/admin/v1/workspaces/', `/admin/v1/workspaces/${ws?.subdomain ?? 'x'}/webhook-endpoints/`, '/admin/v1/products/', '/docs/', '/healthz/', '/metrics', '/scim/v2/', '/scim/v2/Users/', '/scim/v2/groups/');
    const segment = fc.oneof(
      fc.webSegment(),
      anyText.map((s) => encodeURIComponent(s)),
      printable.map((s) => s.replace(/[?#\s]/g, '')),
      fc.constantFrom('..', '%2e%2e', '%2F', '%00', '%', '%E0%A4%A', '.', '', 'users', 'member@example.com', ws?.subdomain ?? 'x'),
    );
    const paths = fc.tuple(prefixes, fc.array(segment, { maxLength: 4 })).map(([prefix, segs]) => `${prefix}${segs.join('/')}`);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...METHODS), paths, fc.option(userBodies, { nil: undefined }), remoteAddress, async (method, path, body, address) => {
        const url = path.startsWith('/') ? path : `/${path}`;
        // Deleting the fuzzed workspace itself is a valid request that would end the run.
        fc.pre(!(method === 'DELETE' && /^\/admin\/v1\/workspaces\/[^/]+\/?$/.test(url) && url.includes(ws.subdomain)));
        const withBody = body !== undefined && !['GET', 'HEAD'].includes(method);
        await exchange({
          method,
          url,
          headers: {
            host: ws.host,
            'x-api-key': ws.apiKey,
            authorization: `Bearer ${ADMIN_TOKEN}`,
            ...(withBody ? { 'content-type': 'application/json' } : {}),
          },
          ...(withBody ? { payload: JSON.stringify(body) } : {}),
          remoteAddress: address,
        });
      }),
      { numRuns: RUNS * 2 },
    );
  });

  describe('SCIM /scim/v2', () => {
    let userId: string;
    let groupId: string;
    const scimHeaders = () => ({ host: ws.host, authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/scim+json' });

    before(async () => {
      // A user of its own: the path fuzzing above may have deactivated the seeded ones.
      const user = await app.inject({
        method: 'POST',
        url: '/scim/v2/Users',
        headers: scimHeaders(),
        payload: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'scim-fuzz@example.com', name: { givenName: 'Scim', familyName: 'Fuzz' } }),
      });
      assert.equal(user.statusCode, 201, user.body);
      userId = json<{ id: string }>(user).id;
      // A product of its own: the admin fuzzing above may have changed the demo catalogue's roles.
      assert.ok((await ctx.admin('PUT', '/products/scim-fuzz', { roles: ['viewer'] })).statusCode < 300);
      const group = await app.inject({ method: 'POST', url: '/scim/v2/Groups', headers: scimHeaders(), payload: JSON.stringify({ displayName: 'scim-fuzz:viewer' }) });
      assert.equal(group.statusCode, 201, group.body);
      groupId = json<ScimGroup>(group).id;
    });

    const attributes = fc.oneof(
      fc.constantFrom('userName', 'USERNAME', 'name.givenName', 'name.familyName', 'emails', 'emails.value', 'emails.type', 'active', 'id', 'externalId', 'meta.created', 'meta.lastModified', 'roles.value', 'title', 'addresses.country', 'displayName', 'members', 'members.value', 'password', 'groups', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', 'urn:ietf:params:scim:schemas:extension:wum:2.0:User:workspaceRole', 'bogus', 'name', 'meta'),
      printable.map((s) => s.replace(/\s/g, '')),
    );
    const operators = fc.oneof(fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le', 'pr', 'EQ', 'Pr', 'xx', ''), printable);
    const values = fc.oneof(
      fc.constantFrom('"member@example.com"', '"x"', 'true', 'false', 'null', '1', '-1.5e3', '"2015-10-10T14:38:21.8617979-07:00"', '2015-10-10T14:38:21Z', 'Employee', '"\\"', '"%"', '"_"', '"\u0000"', '""'),
      anyText.map((t) => JSON.stringify(t)),
      printable,
    );
    const comparison = fc.tuple(attributes, operators, values).map(([a, o, v]) => (o.toLowerCase() === 'pr' ? `${a} pr` : `${a} ${o} ${v}`));
    const filters: fc.Arbitrary<string> = fc.letrec<{ filter: string }>((tie) => ({
      filter: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        comparison,
        fc.tuple(tie('filter'), fc.constantFrom('and', 'or', 'AND', 'Or', 'nor'), tie('filter')).map(([a, op, b]) => `${a} ${op} ${b}`),
        tie('filter').map((f) => `not (${f})`),
        tie('filter').map((f) => `(${f})`),
        fc.tuple(fc.constantFrom('emails', 'addresses', 'roles', 'members', 'name', 'title'), tie('filter')).map(([a, f]) => `${a}[${f}]`),
        printable,
      ),
    })).filter;

    test('filters: grammar-shaped and broken filters on Users and Groups are 200 or 400 invalidFilter, never 5xx', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('Users', 'Groups'), filters, fc.option(printable, { nil: undefined }), async (endpoint, filter, projection) => {
          const query = new URLSearchParams({ filter, ...(projection === undefined ? {} : { attributes: projection }) });
          const res = await exchange({ method: 'GET', url: `/scim/v2/${endpoint}?${query}`, headers: scimHeaders() });
          assert.ok([200, 400, 414].includes(res.statusCode), `${filter} → ${res.statusCode} ${res.body.slice(0, 200)}`);
        }),
        { numRuns: RUNS * 2 },
      );
    });

    const paths = fc.oneof(
      fc.constantFrom('active', 'userName', 'name.givenName', 'emails[type eq "work"].value', 'emails[type eq "work"', 'members', 'members[value eq "x"]', 'members[display eq "x"]', 'roles', 'roles[primary eq "True"].value', 'displayName', 'externalId', 'id', 'meta.created', 'urn:ietf:params:scim:schemas:extension:wum:2.0:User:workspaceRole', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager', 'phoneNumbers[type eq "mobile"]', '', ']', '[[', 'a.b.c.d'),
      filters,
      printable,
    );
    const patchValues = fc.oneof(
      fc.constantFrom(true, false, 'True', 'False', 'non_owner', 'owner', 'crm:admin', 'not-an-email', 'member@example.com', 'owner@example.com'),
      fc.constant([{ value: 'crm:member' }]),
      fc.jsonValue({ maxDepth: 3 }),
    );
    const operations = fc.array(
      fc.record(
        { op: fc.oneof(fc.constantFrom('add', 'remove', 'replace', 'Add', 'Replace', 'REMOVE', 'move', ''), anyText, fc.integer()), path: paths, value: patchValues },
        { requiredKeys: [] },
      ),
      { maxLength: 4 },
    );
    const patchBodies = fc.oneof(
      fc.record(
        { schemas: fc.oneof(fc.constant(['urn:ietf:params:scim:api:messages:2.0:PatchOp']), fc.jsonValue({ maxDepth: 1 })), Operations: fc.oneof(operations, fc.jsonValue({ maxDepth: 2 })) },
        { requiredKeys: ['Operations'] },
      ).map((b) => JSON.stringify(b)),
      anyText,
      fc.constantFrom('{', '[]', 'null', '{"Operations": null}'),
    );

    test('PATCH paths and bodies on a user and a group: 2xx, 400 with a scimType, 404 or 409; a refusal changes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('Users', 'Groups'), patchBodies, fc.option(fc.constantFrom('"1"', '*', 'W/"1"', 'x'), { nil: undefined }), async (endpoint, payload, ifMatch) => {
          const id = endpoint === 'Users' ? userId : groupId;
          const res = await exchange({
            method: 'PATCH',
            url: `/scim/v2/${endpoint}/${id}`,
            headers: { ...scimHeaders(), ...(ifMatch ? { 'if-match': ifMatch } : {}) },
            payload,
          });
          assert.ok([200, 204, 400, 409, 412].includes(res.statusCode), `${payload.slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 200)}`);
        }),
        { numRuns: RUNS * 2 },
      );
    });

    // Built when the test runs, so that members can name the seeded user.
    const resourceBodies = () => fc.oneof(
      fc.record(
        {
          schemas: fc.oneof(fc.constant(['urn:ietf:params:scim:schemas:core:2.0:User']), fc.jsonValue({ maxDepth: 1 })),
          userName: fc.oneof(fc.emailAddress(), fc.constant('member@example.com'), anyText, fc.integer(), fc.constant(null)),
          displayName: fc.oneof(fc.constantFrom('crm:admin', 'scim-fuzz:viewer', 'crm:nope', 'free text'), anyText, fc.integer()),
          active: fc.oneof(fc.boolean(), fc.constantFrom('True', 'False', 'yes'), fc.jsonValue({ maxDepth: 1 })),
          name: fc.oneof(fc.record({ givenName: fc.oneof(anyText, fc.integer()), familyName: anyText }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 1 })),
          emails: fc.oneof(fc.array(fc.record({ value: anyText, type: anyText, Primary: fc.oneof(fc.boolean(), anyText) }, { requiredKeys: [] }), { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
          roles: fc.oneof(fc.array(fc.record({ value: fc.oneof(fc.constantFrom('crm:admin', 'crm:', ':x', 'nope:x'), anyText) }, { requiredKeys: [] }), { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
          members: fc.oneof(fc.array(fc.oneof(fc.record({ value: fc.oneof(anyText, fc.constant(userId)) }, { requiredKeys: [] }), anyText), { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
          'urn:ietf:params:scim:schemas:extension:wum:2.0:User': fc.oneof(fc.record({ workspaceRole: fc.oneof(fc.constantFrom('owner', 'non_owner'), anyText) }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 1 })),
          extra: fc.jsonValue({ maxDepth: 2 }),
        },
        { requiredKeys: [] },
      ).map((b) => JSON.stringify(b)),
      anyText,
    );

    test('POST and PUT bodies on Users and Groups: 2xx, 400 with a scimType, or 409; a refusal changes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('POST /Users', 'PUT /Users/{id}', 'POST /Groups', 'PUT /Groups/{id}'), resourceBodies(), async (target, payload) => {
          const [method, path] = target.split(' ') as ['POST' | 'PUT', string];
          const url = `/scim/v2${path.replace('{id}', path.startsWith('/Users') ? userId : groupId)}`;
          const res = await exchange({ method, url, headers: scimHeaders(), payload });
          assert.ok([200, 201, 400, 409].includes(res.statusCode), `${target} ${payload.slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 200)}`);
        }),
        { numRuns: RUNS },
      );
    });
  });

  test('after all of it the seeded users are intact and the service answers normally', async () => {
    const owner = await ctx.api(ws, 'GET', '/users/owner@example.com');
    assert.equal(owner.statusCode, 200);
    assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200);
  });
});
