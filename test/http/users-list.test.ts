import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/** The `Link` header as `rel → URL` (RFC 8288: `<url>; rel="name"`, comma-separated). */
function parseLinks(response: LightMyRequestResponse): Map<string, URL> {
  const header = response.headers.link;
  assert.equal(typeof header, 'string', 'a Link header is present');
  const links = new Map<string, URL>();
  for (const part of (header as string).split(/,\s*(?=<)/)) {
    const match = /^<([^>]+)>\s*;\s*rel="?([^";]+)"?\s*$/.exec(part.trim());
    assert.ok(match, `well-formed link value: ${part}`);
    assert.ok(!links.has(match[2]!), `rel ${match[2]} appears once`);
    links.set(match[2]!, new URL(match[1]!));
  }
  return links;
}

/** The page number a link points at. */
function pageOf(links: Map<string, URL>, rel: string): number | undefined {
  const url = links.get(rel);
  return url ? Number(url.searchParams.get('page_number')) : undefined;
}

describe(`GET /users [${BACKEND}]`, () => {
  let ctx: TestContext;
  /** 25 users added in this order; the 3rd, 10th and 20th are deactivated afterwards. */
  let big: TestWorkspace;
  const bigEmails = Array.from({ length: 25 }, (_, i) => `user${String(i).padStart(2, '0')}@example.com`);
  const deactivated = new Set([bigEmails[2], bigEmails[9], bigEmails[19]]);
  const activeEmails = bigEmails.filter((e) => !deactivated.has(e));

  const emails = (res: LightMyRequestResponse): string[] => json<'listUsers'>(res).users.map((u: { email: string }) => u.email);

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    big = await ctx.createWorkspace('list');
    // Names sort differently from emails and from creation order, so order by name would show.
    for (const [i, email] of bigEmails.entries()) {
      const res = await ctx.api(big, 'POST', '/users', { body: userBody(email, { first_name: `N${25 - i}` }) });
      assert.equal(res.statusCode, 201);
    }
    for (const email of deactivated) {
      assert.equal((await ctx.api(big, 'DELETE', `/users/${email}`)).statusCode, 204);
    }
  });
  after(() => ctx.close());

  test('defaults: page 1 of 30; the envelope with total_count = total_records', async () => {
    const res = await ctx.api(big, 'GET', '/users');
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /^application\/json/);
    const body = json<'listUsers'>(res);
    assert.deepEqual(Object.keys(body).sort(), ['pagination', 'total_count', 'users']);
    assert.deepEqual(body.pagination, { total_records: 22, current_page_number: 1, total_pages: 1, page_size: 30 });
    assert.equal(body.total_count, 22);
    assert.deepEqual(emails(res), activeEmails);
  });

  test('each item is a full user: id, email, role, names, apps, status, RFC 3339 UTC timestamps', async () => {
    const ws = await ctx.createWorkspace();
    await ctx.api(ws, 'POST', '/users', {
      body: userBody('Item@Example.com', {
        role: 'owner',
        first_name: 'Ida',
        apps: [{ name: 'helpdesk', role: 'agent' }, { name: 'crm', role: 'admin' }],
      }),
    });
    const res = await ctx.api(ws, 'GET', '/users');
    const item = json<'listUsers'>(res).users[0]!;
    assert.deepEqual(Object.keys(item).sort(), ['apps', 'created_at', 'email', 'expires_at', 'first_name', 'id', 'last_active_at', 'last_name', 'role', 'status', 'updated_at']);
    assert.match(item.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUID');
    assert.equal(item.email, 'Item@Example.com');
    assert.equal(item.role, 'owner');
    assert.equal(item.first_name, 'Ida');
    assert.equal(item.last_name, '-');
    assert.deepEqual(item.apps, [{ name: 'helpdesk', role: 'agent' }, { name: 'crm', role: 'admin' }]);
    assert.equal(item.status, 'active');
    for (const field of ['created_at', 'updated_at'] as const) {
      assert.match(item[field], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, field);
    }
    const one = await ctx.api(ws, 'GET', '/users/item%40example.com');
    assert.deepEqual(json<'getUser'>(one), item, 'the list item equals the single user');
  });

  test('an empty workspace: users [], total 0, total_pages 0', async () => {
    const ws = await ctx.createWorkspace();
    const res = await ctx.api(ws, 'GET', '/users');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json<'listUsers'>(res), {
      users: [],
      pagination: { total_records: 0, current_page_number: 1, total_pages: 0, page_size: 30 },
      total_count: 0,
    });
    const links = parseLinks(res);
    assert.equal(pageOf(links, 'first'), 1);
    assert.equal(links.has('prev'), false);
    assert.equal(links.has('next'), false);
  });

  test('pages of 10 over all 25 users, concatenated, are the creation order; total_pages = ceil(25/10)', async () => {
    const seen: string[] = [];
    for (const page of [1, 2, 3]) {
      const res = await ctx.api(big, 'GET', '/users', { query: { status: 'all', page_size: '10', page_number: String(page) } });
      assert.equal(res.statusCode, 200);
      const body = json<'listUsers'>(res);
      assert.deepEqual(body.pagination, { total_records: 25, current_page_number: page, total_pages: 3, page_size: 10 });
      assert.equal(body.total_count, 25);
      assert.equal(body.users.length, page === 3 ? 5 : 10);
      seen.push(...emails(res));
    }
    assert.deepEqual(seen, bigEmails);
  });

  test('total_pages is ceil(total / size) for several sizes', async () => {
    for (const [size, pages] of [[1, 22], [7, 4], [11, 2], [21, 2], [22, 1], [100, 1]] as const) {
      const res = await ctx.api(big, 'GET', '/users', { query: { page_size: String(size) } });
      assert.equal(json<'listUsers'>(res).pagination.total_pages, pages, `page_size ${size}`);
      assert.equal(json<'listUsers'>(res).users.length, Math.min(size, 22));
    }
  });

  test('pages do not shift when users are added at the end', async () => {
    const ws = await ctx.createWorkspace();
    for (const e of ['p1@example.com', 'p2@example.com', 'p3@example.com']) {
      await ctx.api(ws, 'POST', '/users', { body: userBody(e) });
    }
    const before1 = emails(await ctx.api(ws, 'GET', '/users', { query: { page_size: '2', page_number: '1' } }));
    await ctx.api(ws, 'POST', '/users', { body: userBody('a0@example.com') });
    const after1 = emails(await ctx.api(ws, 'GET', '/users', { query: { page_size: '2', page_number: '1' } }));
    const after2 = emails(await ctx.api(ws, 'GET', '/users', { query: { page_size: '2', page_number: '2' } }));
    assert.deepEqual(before1, ['p1@example.com', 'p2@example.com']);
    assert.deepEqual(after1, before1);
    assert.deepEqual(after2, ['p3@example.com', 'a0@example.com'], 'the newest user comes last, whatever its email');
  });

  test('a reactivated user keeps its place (creation order, not update order)', async () => {
    const ws = await ctx.createWorkspace();
    for (const e of ['r1@example.com', 'r2@example.com', 'r3@example.com']) {
      await ctx.api(ws, 'POST', '/users', { body: userBody(e) });
    }
    await ctx.api(ws, 'DELETE', '/users/r1@example.com');
    await ctx.api(ws, 'POST', '/users', { body: userBody('r1@example.com') });
    assert.deepEqual(emails(await ctx.api(ws, 'GET', '/users')), ['r1@example.com', 'r2@example.com', 'r3@example.com']);
  });

  test('a page past the end → 200, users [], correct totals', async () => {
    const res = await ctx.api(big, 'GET', '/users', { query: { page_size: '10', page_number: '4' } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json<'listUsers'>(res), {
      users: [],
      pagination: { total_records: 22, current_page_number: 4, total_pages: 3, page_size: 10 },
      total_count: 22,
    });
    const far = await ctx.api(big, 'GET', '/users', { query: { page_number: '1000000' } });
    assert.equal(far.statusCode, 200);
    assert.deepEqual(json<'listUsers'>(far).users, []);
    assert.equal(json<'listUsers'>(far).total_count, 22);
    assert.equal(json<'listUsers'>(far).pagination.current_page_number, 1000000);
  });

  test('status filter: active by default, deactivated, all', async () => {
    const active = await ctx.api(big, 'GET', '/users', { query: { status: 'active' } });
    assert.deepEqual(emails(active), activeEmails);
    assert.ok(json<'listUsers'>(active).users.every((u: { status: string }) => u.status === 'active'));

    const gone = await ctx.api(big, 'GET', '/users', { query: { status: 'deactivated' } });
    assert.deepEqual(emails(gone), bigEmails.filter((e) => deactivated.has(e)));
    assert.ok(json<'listUsers'>(gone).users.every((u: { status: string }) => u.status === 'deactivated'));
    assert.equal(json<'listUsers'>(gone).total_count, 3);
    assert.deepEqual(json<'listUsers'>(gone).users[0]!.apps, [{ name: 'crm', role: 'member' }], 'deactivated items still show their apps');

    const all = await ctx.api(big, 'GET', '/users', { query: { status: 'all' } });
    assert.deepEqual(emails(all), bigEmails);
    assert.equal(json<'listUsers'>(all).total_count, 25);
    assert.equal(json<'listUsers'>(all).pagination.total_records, 25);
  });

  test('page_size 1 and 100 are accepted', async () => {
    for (const size of ['1', '100']) {
      const res = await ctx.api(big, 'GET', '/users', { query: { page_size: size } });
      assert.equal(res.statusCode, 200, size);
      assert.equal(json<'listUsers'>(res).pagination.page_size, Number(size));
    }
  });

  const invalid: [string, string][] = [
    ['page_size=0', 'page_size'],
    ['page_size=101', 'page_size'],
    ['page_size=x', 'page_size'],
    ['page_size=1.5', 'page_size'],
    ['page_size=-1', 'page_size'],
    ['page_size=', 'page_size'],
    ['page_size=5&page_size=6', 'page_size'],
    ['page_number=0', 'page_number'],
    ['page_number=-1', 'page_number'],
    ['page_number=abc', 'page_number'],
    ['page_number=2.5', 'page_number'],
    ['page_number=1&page_number=2', 'page_number'],
    ['status=bogus', 'status'],
    ['status=ACTIVE', 'status'],
    ['status=all&status=active', 'status'],
  ];
  for (const [query, field] of invalid) {
    test(`?${query} → 400 invalid_parameter naming ${field}`, async () => {
      const res = await ctx.api(big, 'GET', `/users?${query}`);
      assert.equal(res.statusCode, 400, res.body);
      assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
      const problem = json<'Problem'>(res);
      assert.equal(problem.code, 'invalid_parameter');
      assert.equal(problem.status, 400);
      assert.ok(Array.isArray(problem.errors) && problem.errors.length > 0);
      assert.deepEqual(problem.errors!.map((e: { field: string }) => e.field), [field]);
      assert.equal(typeof problem.errors![0]!.message, 'string');
    });
  }

  test('several invalid parameters are all named', async () => {
    const res = await ctx.api(big, 'GET', '/users?page_size=0&page_number=x&status=nope');
    assert.equal(res.statusCode, 400);
    assert.deepEqual(json<'Problem'>(res).errors!.map((e: { field: string }) => e.field).sort(), ['page_number', 'page_size', 'status']);
  });

  test('Link header: first/next/last on page 1, no prev', async () => {
    const res = await ctx.api(big, 'GET', '/users', { query: { page_size: '10' } });
    const links = parseLinks(res);
    assert.deepEqual([...links.keys()].sort(), ['first', 'last', 'next']);
    assert.equal(pageOf(links, 'first'), 1);
    assert.equal(pageOf(links, 'next'), 2);
    assert.equal(pageOf(links, 'last'), 3);
    for (const url of links.values()) {
      assert.equal(url.pathname, `${API}/users`);
      assert.equal(url.host, big.host, 'absolute URL on the workspace host');
      assert.equal(url.searchParams.get('page_size'), '10');
    }
  });

  test('Link header: all four rels in the middle, no next on the last page', async () => {
    const middle = parseLinks(await ctx.api(big, 'GET', '/users', { query: { page_size: '5', page_number: '3' } }));
    assert.deepEqual([...middle.keys()].sort(), ['first', 'last', 'next', 'prev']);
    assert.equal(pageOf(middle, 'first'), 1);
    assert.equal(pageOf(middle, 'prev'), 2);
    assert.equal(pageOf(middle, 'next'), 4);
    assert.equal(pageOf(middle, 'last'), 5);

    const last = parseLinks(await ctx.api(big, 'GET', '/users', { query: { page_size: '5', page_number: '5' } }));
    assert.deepEqual([...last.keys()].sort(), ['first', 'last', 'prev']);
    assert.equal(pageOf(last, 'prev'), 4);
    assert.equal(pageOf(last, 'last'), 5);

    const past = parseLinks(await ctx.api(big, 'GET', '/users', { query: { page_size: '5', page_number: '9' } }));
    assert.equal(past.has('next'), false, 'no next beyond the end');
    assert.equal(pageOf(past, 'last'), 5);
  });

  test('Link header: following next from page 1 walks every page, then stops', async () => {
    const seen: string[] = [];
    let url: string | undefined = `/users?status=all&page_size=7`;
    let pages = 0;
    while (url) {
      const res = await ctx.api(big, 'GET', url);
      assert.equal(res.statusCode, 200);
      seen.push(...emails(res));
      pages += 1;
      const next = parseLinks(res).get('next');
      url = next ? `${next.pathname.slice(API.length)}${next.search}` : undefined;
      assert.ok(pages <= 4, 'terminates');
    }
    assert.equal(pages, 4);
    assert.deepEqual(seen, bigEmails);
  });

  test('Link header keeps the status filter', async () => {
    const res = await ctx.api(big, 'GET', '/users', { query: { status: 'all', page_size: '10', page_number: '2' } });
    const links = parseLinks(res);
    assert.deepEqual([...links.keys()].sort(), ['first', 'last', 'next', 'prev']);
    for (const [rel, url] of links) assert.equal(url.searchParams.get('status'), 'all', rel);
    assert.equal(pageOf(links, 'last'), 3, 'last counts all 25 users, not only the active ones');
    const deactivatedLinks = parseLinks(await ctx.api(big, 'GET', '/users', { query: { status: 'deactivated', page_size: '2' } }));
    assert.equal(deactivatedLinks.get('next')?.searchParams.get('status'), 'deactivated');
    assert.equal(pageOf(deactivatedLinks, 'last'), 2);
  });

  test('Link header keeps another parameter that spells out a page_number pair, and pages only its own', async () => {
    const q = '&page_number=%00';
    const res = await ctx.api(big, 'GET', `/users?q=${encodeURIComponent(q)}&status=all&page_size=3`);
    assert.equal(res.statusCode, 200);
    const links = parseLinks(res);
    assert.deepEqual([...links.keys()].sort(), ['first', 'last']);
    for (const [rel, url] of links) {
      assert.equal(url.searchParams.get('q'), q, rel);
      assert.equal(url.searchParams.get('status'), 'all', rel);
      assert.deepEqual(url.searchParams.getAll('page_number'), ['1'], rel);
    }
  });

  test('a workspace lists only its own users', async () => {
    const ws = await ctx.createWorkspace();
    await ctx.api(ws, 'POST', '/users', { body: userBody('solo@example.com') });
    const res = await ctx.api(ws, 'GET', '/users', { query: { status: 'all' } });
    assert.deepEqual(emails(res), ['solo@example.com']);
    assert.equal(json<'listUsers'>(res).total_count, 1);
  });
});
