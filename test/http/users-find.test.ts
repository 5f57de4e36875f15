import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

interface Person {
  email: string;
  first_name: string;
  last_name: string;
  role?: string;
  apps?: Array<{ name: string; role: string }>;
}

/** Added in this order; the last two are deactivated afterwards. */
const PEOPLE: Person[] = [
  { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', role: 'owner', apps: [{ name: 'crm', role: 'admin' }] },
  { email: 'alan@example.com', first_name: 'Alan', last_name: 'Turing', apps: [{ name: 'crm', role: 'member' }] },
  { email: 'grace@navy.example', first_name: 'Grace', last_name: 'Hopper', apps: [{ name: 'analytics', role: 'viewer' }] },
  { email: 'Edsger@Example.com', first_name: 'Edsger', last_name: 'Dijkstra', apps: [] },
  { email: 'barbara@example.com', first_name: 'Barbara', last_name: 'Liskov', role: 'owner', apps: [{ name: 'crm', role: 'member' }, { name: 'helpdesk', role: 'agent' }] },
  { email: 'linus@example.com', first_name: 'Linus', last_name: 'Adams', apps: [{ name: 'helpdesk', role: 'supervisor' }] },
  { email: 'percent%sign@example.com', first_name: '100%', last_name: 'under_score', apps: [] },
  { email: 'ken@example.com', first_name: 'Ken', last_name: 'Thompson', apps: [{ name: 'crm', role: 'admin' }] },
  { email: 'dennis@example.com', first_name: 'Dennis', last_name: 'Ritchie', apps: [{ name: 'crm', role: 'member' }] },
];
const DEACTIVATED = new Set(['ken@example.com', 'dennis@example.com']);

describe(`GET /users: q, role, app, sort [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('find');
    for (const person of PEOPLE) {
      const res = await ctx.api(ws, 'POST', '/users', { body: userBody(person.email, { role: 'non_owner', ...person }) });
      assert.equal(res.statusCode, 201, res.body);
    }
    for (const email of DEACTIVATED) assert.equal((await ctx.api(ws, 'DELETE', `/users/${email}`)).statusCode, 204);
  });
  after(() => ctx.close());

  const list = (query: Record<string, string>) => ctx.api(ws, 'GET', '/users', { query });
  const emails = (res: LightMyRequestResponse): string[] => {
    assert.equal(res.statusCode, 200, res.body);
    return json<'listUsers'>(res).users.map((u) => u.email);
  };
  /** The people matching `keep`, in creation order, active unless `status` says otherwise. */
  const expected = (keep: (p: Person) => boolean, status: 'active' | 'all' | 'deactivated' = 'active') =>
    PEOPLE.filter((p) => (status === 'all' ? true : (status === 'active') !== DEACTIVATED.has(p.email)))
      .filter(keep)
      .map((p) => p.email);

  test('q: a prefix of the email, the first or the last name, ignoring case; totals count the matches', async () => {
    const res = await list({ q: 'A' });
    const starts = (s: string) => s.toLowerCase().startsWith('a');
    const want = expected((p) => starts(p.email) || starts(p.first_name) || starts(p.last_name));
    assert.deepEqual(emails(res), want);
    assert.deepEqual(want, ['ada@example.com', 'alan@example.com', 'linus@example.com']);
    assert.equal(json<'listUsers'>(res).total_count, 3);
    assert.deepEqual(json<'listUsers'>(res).pagination, { total_records: 3, current_page_number: 1, total_pages: 1, page_size: 30 });
    assert.deepEqual(emails(await list({ q: 'hop' })), ['grace@navy.example'], 'last name');
    assert.deepEqual(emails(await list({ q: 'EDSGER@ex' })), ['Edsger@Example.com'], 'email, case-insensitive');
    assert.deepEqual(emails(await list({ q: 'ovelace' })), [], 'a prefix, not a substring');
    assert.deepEqual(emails(await list({ q: 'navy' })), [], 'the domain is not a prefix of the email');
  });

  test('q takes %, _ and \\ literally', async () => {
    assert.deepEqual(emails(await list({ q: '100%' })), ['percent%sign@example.com']);
    assert.deepEqual(emails(await list({ q: '%' })), []);
    assert.deepEqual(emails(await list({ q: '_' })), []);
    assert.deepEqual(emails(await list({ q: 'under_' })), ['percent%sign@example.com']);
    assert.deepEqual(emails(await list({ q: 'under\\' })), []);
    assert.deepEqual(emails(await list({ q: 'a_a' })), [], '_ is not a wildcard');
  });

  test('an empty q is no filter', async () => {
    assert.deepEqual(emails(await list({ q: '' })), expected(() => true));
  });

  test('role and app filters, combined with status and q by AND', async () => {
    assert.deepEqual(emails(await list({ role: 'owner' })), ['ada@example.com', 'barbara@example.com']);
    assert.deepEqual(emails(await list({ role: 'non_owner', q: 'a' })), ['alan@example.com', 'linus@example.com']);
    const crm = (p: Person) => (p.apps ?? []).some((a) => a.name === 'crm');
    assert.deepEqual(emails(await list({ app: 'crm' })), expected(crm));
    assert.deepEqual(emails(await list({ app: 'crm', status: 'all' })), expected(crm, 'all'));
    assert.deepEqual(emails(await list({ app: 'crm', status: 'deactivated' })), ['ken@example.com', 'dennis@example.com']);
    assert.deepEqual(emails(await list({ app: 'crm:member' })), ['alan@example.com', 'barbara@example.com']);
    assert.deepEqual(emails(await list({ app: 'crm:admin', role: 'owner' })), ['ada@example.com']);
    assert.deepEqual(emails(await list({ app: 'helpdesk', q: 'l' })), ['barbara@example.com', 'linus@example.com']);
    assert.deepEqual(emails(await list({ app: 'billing' })), [], 'an unknown product matches nobody');
    assert.deepEqual(emails(await list({ app: 'CRM' })), [], 'product names are case-sensitive');
    const none = await list({ app: 'crm:wizard' });
    assert.deepEqual(emails(none), []);
    assert.equal(json<'listUsers'>(none).total_count, 0);
    assert.equal(json<'listUsers'>(none).pagination.total_pages, 0);
  });

  test('sort: created_at (default), -created_at, email and -email (ignoring case)', async () => {
    const active = expected(() => true);
    assert.deepEqual(emails(await list({})), active);
    assert.deepEqual(emails(await list({ sort: 'created_at' })), active);
    assert.deepEqual(emails(await list({ sort: '-created_at' })), [...active].reverse());
    const byEmail = [...active].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));
    assert.deepEqual(emails(await list({ sort: 'email' })), byEmail);
    assert.deepEqual(emails(await list({ sort: '-email' })), [...byEmail].reverse());
    assert.deepEqual(emails(await list({ sort: 'email', app: 'crm', status: 'all' })), [
      'ada@example.com',
      'alan@example.com',
      'barbara@example.com',
      'dennis@example.com',
      'ken@example.com',
    ]);
  });

  test('filtered pages: exact totals, stable pages, empty past the end, Link keeps every parameter', async () => {
    const all = emails(await list({ status: 'all', sort: 'email', page_size: '100' }));
    const pages: string[] = [];
    for (let page = 1; page <= 4; page += 1) {
      const res = await list({ status: 'all', sort: 'email', page_size: '3', page_number: String(page) });
      assert.equal(json<'listUsers'>(res).total_count, PEOPLE.length);
      assert.equal(json<'listUsers'>(res).pagination.total_pages, 3);
      pages.push(...emails(res));
    }
    assert.deepEqual(pages, all, 'the pages together are the whole listing, once each');
    const res = await list({ q: 'a', app: 'crm', role: 'non_owner', sort: '-email', status: 'all', page_size: '1', page_number: '1' });
    const link = res.headers.link as string;
    assert.equal(json<'listUsers'>(res).total_count, 1);
    for (const rel of ['first', 'last']) {
      const match = new RegExp(`<([^>]+)>; rel="${rel}"`).exec(link);
      assert.ok(match, `${rel} in ${link}`);
      const url = new URL(match[1]!);
      assert.equal(url.searchParams.get('q'), 'a');
      assert.equal(url.searchParams.get('app'), 'crm');
      assert.equal(url.searchParams.get('role'), 'non_owner');
      assert.equal(url.searchParams.get('sort'), '-email');
      assert.equal(url.searchParams.get('status'), 'all');
    }
  });

  test('bad values → 400 invalid_parameter naming the parameter', async () => {
    const cases: Array<[string, string]> = [
      ['role=admin', 'role'],
      ['sort=name', 'sort'],
      ['sort=-first_name', 'sort'],
      ['app=crm:', 'app'],
      ['app=crm:admin:x', 'app'],
      ['app=', 'app'],
      ['app=c%20rm', 'app'],
      [`q=${'a'.repeat(255)}`, 'q'],
      ['q=a&q=b', 'q'],
      ['role=owner&role=non_owner', 'role'],
    ];
    for (const [query, field] of cases) {
      const res = await ctx.api(ws, 'GET', `/users?${query}`);
      assert.equal(res.statusCode, 400, query);
      const problem = json<'Problem'>(res);
      assert.equal(problem.code, 'invalid_parameter', query);
      assert.ok(problem.errors?.some((e) => e.field === field), `${field}: ${res.body}`);
    }
  });

  test('filters never reach another workspace', async () => {
    const other = await ctx.createWorkspace('find-other');
    await ctx.api(other, 'POST', '/users', { body: userBody('ada@other.example', { first_name: 'Ada' }) });
    assert.deepEqual(emails(await list({ q: 'ada' })), ['ada@example.com', 'linus@example.com'], 'Ada, and Linus Adams');
    assert.deepEqual(emails(await ctx.api(other, 'GET', '/users', { query: { q: 'ada', app: 'crm' } })), ['ada@other.example']);
  });
});
