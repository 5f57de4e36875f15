import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

interface Event {
  id: number;
  occurred_at: string;
  action: string;
  actor_type: string;
  target_id: string;
  workspace?: string | null;
  before: unknown;
  after: unknown;
}

interface Listing {
  audit_events: Event[];
  next_cursor: number | null;
  total_count?: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The path and query of the `rel="next"` link of a `Link` header, if any. */
function nextLink(link: string | undefined): string | undefined {
  const match = /<([^>]+)>; rel="next"/.exec(link ?? '');
  if (!match) return undefined;
  const url = new URL(match[1]!);
  return `${url.pathname}${url.search}`;
}

describe(`audit trail: since/until, cursor pagination, export [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let serial = 0;

  /** Adds a user (one `user.created` event), a little apart in time from the previous one. */
  async function addUser(target: TestWorkspace, email = `u${++serial}@example.com`, user: Record<string, unknown> = {}): Promise<void> {
    await pause(3);
    const res = await ctx.api(target, 'POST', '/users', { body: userBody(email, user) });
    assert.equal(res.statusCode, 201, res.body);
  }

  /** A GET on the workspace's own API: a path below it, or a whole one (a `Link`'s). */
  function own(path: string, target = ws) {
    const url = path.startsWith('/api/') ? path : `/api/external/v2${path}`;
    return ctx.app.inject({ method: 'GET', url, headers: { host: target.host, 'x-api-key': target.apiKey } });
  }

  /** Every event of the workspace by page number, in `sort` order. */
  async function everything(sort: 'occurred_at' | '-occurred_at', target = ws): Promise<Event[]> {
    const all: Event[] = [];
    for (let page = 1; ; page += 1) {
      const res = await own(`/audit-events?page_size=100&page_number=${page}&sort=${sort}`, target);
      assert.equal(res.statusCode, 200, res.body);
      const items = json<Listing>(res).audit_events;
      if (items.length === 0) return all;
      all.push(...items);
    }
  }

  before(async () => {
    ctx = await createTestContext({ RATE_LIMIT_PER_KEY: '0' });
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('trail');
    for (let i = 0; i < 6; i += 1) await addUser(ws);
  });
  after(() => ctx.close());

  test('since is inclusive, until exclusive, on the workspace API, the operator\'s per-workspace and global listings', async () => {
    const events = await everything('occurred_at');
    const pivot = events[3]!;
    const expectedSince = events.filter((e) => e.occurred_at >= pivot.occurred_at).map((e) => e.id);
    const expectedUntil = events.filter((e) => e.occurred_at < pivot.occurred_at).map((e) => e.id);
    const since = encodeURIComponent(pivot.occurred_at);
    const ids = (res: { statusCode: number; body: string }) => {
      assert.equal(res.statusCode, 200, res.body);
      return json<Listing>(res).audit_events.map((e) => e.id);
    };
    assert.deepEqual(ids(await own(`/audit-events?sort=occurred_at&page_size=100&since=${since}`)), expectedSince);
    assert.deepEqual(ids(await own(`/audit-events?sort=occurred_at&page_size=100&until=${since}`)), expectedUntil);
    assert.deepEqual(ids(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100&since=${since}`)), expectedSince);
    assert.deepEqual(ids(await ctx.admin('GET', `/audit-events?page_size=100&workspace=${ws.subdomain}&until=${since}`)), expectedUntil);
    // Both together, an empty window, and an offset other than Z.
    const window = await own(`/audit-events?sort=occurred_at&since=${since}&until=${encodeURIComponent(events[5]!.occurred_at)}`);
    assert.deepEqual(ids(window), events.filter((e) => e.occurred_at >= pivot.occurred_at && e.occurred_at < events[5]!.occurred_at).map((e) => e.id));
    assert.deepEqual(ids(await own(`/audit-events?since=${since}&until=${since}`)), []);
    const shifted = new Date(new Date(pivot.occurred_at).getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    assert.deepEqual(ids(await own(`/audit-events?sort=occurred_at&page_size=100&since=${encodeURIComponent(shifted)}`)), expectedSince);
    const global = await ctx.admin('GET', `/audit-events?page_size=100&since=${since}`);
    assert.ok(ids(global).includes(pivot.id));
    assert.ok(!ids(global).some((id) => expectedUntil.includes(id)), 'the global listing applies since too');
  });

  test('bad since, until, starting_after and format → 400 invalid_parameter, never a 5xx', async () => {
    for (const query of [
      'since=yesterday',
      'since=2025-01-01',
      'since=2025-01-01T00:00:00',
      'until=2025-13-01T00:00:00Z',
      'until=2025-01-01T25:00:00Z',
      'starting_after=-1',
      'starting_after=abc',
      'starting_after=1e300',
      'starting_after=3&page_number=1',
    ]) {
      for (const res of [
        await own(`/audit-events?${query}`),
        await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?${query}`),
        await ctx.admin('GET', `/audit-events?${query}`),
      ]) {
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
        assert.equal(json<'Problem'>(res).code, 'invalid_parameter', query);
      }
    }
    for (const query of ['format=xml', 'since=soon', 'until=2025-01-01']) {
      for (const res of [await own(`/audit-events/export?${query}`), await ctx.admin('GET', `/audit-events/export?${query}`)]) {
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.equal(json<'Problem'>(res).code, 'invalid_parameter', query);
      }
    }
    const missing = await ctx.admin('GET', '/workspaces/no-such-workspace/audit-events/export');
    assert.equal(missing.statusCode, 404);
    assert.equal(json<'Problem'>(missing).code, 'workspace_not_found');
  });

  for (const sort of ['occurred_at', '-occurred_at'] as const) {
    test(`a listing read by cursor (sort=${sort}) while events are written neither skips nor repeats one`, async () => {
      const target = await ctx.createWorkspace('cursor');
      for (let i = 0; i < 7; i += 1) await addUser(target);
      const before = await everything(sort, target);
      const seen: Event[] = [];
      let path: string | undefined = `/audit-events?sort=${sort}&page_size=3&starting_after=${sort === 'occurred_at' ? 0 : Number.MAX_SAFE_INTEGER}`;
      let pages = 0;
      while (path) {
        const res = await own(path, target);
        assert.equal(res.statusCode, 200, res.body);
        const body = json<Listing>(res);
        seen.push(...body.audit_events);
        const next = nextLink(res.headers.link as string | undefined);
        if (body.next_cursor === null) assert.equal(next, undefined, 'no next link at the end');
        else assert.match(next ?? '', new RegExp(`starting_after=${body.next_cursor}(&|$)`));
        assert.doesNotMatch(next ?? '', /page_number/);
        path = next;
        // Written between two pages: in oldest-first order they come later in the same read.
        if (pages < 3) await addUser(target);
        pages += 1;
      }
      const ids = seen.map((e) => e.id);
      assert.equal(new Set(ids).size, ids.length, 'no event twice');
      const sorted = [...ids].sort((a, b) => (sort === 'occurred_at' ? a - b : b - a));
      assert.deepEqual(ids, sorted, 'in the order of sort');
      for (const event of before) assert.ok(ids.includes(event.id), `event ${event.id} listed`);
      if (sort === 'occurred_at') {
        assert.deepEqual(ids, (await everything(sort, target)).map((e) => e.id), 'oldest first, the read reaches every event written meanwhile');
      } else {
        assert.deepEqual(ids, before.map((e) => e.id), 'newest first, the read lists what was there when it began');
      }
    });
  }

  test('next_cursor on a page-number page continues it; the operator listings take the cursor too', async () => {
    const first = await own('/audit-events?sort=occurred_at&page_size=2');
    const body = json<Listing>(first);
    assert.equal(body.next_cursor, body.audit_events[1]!.id);
    const second = await own('/audit-events?sort=occurred_at&page_size=2&page_number=2');
    const byCursor = await own(`/audit-events?sort=occurred_at&page_size=2&starting_after=${body.next_cursor}`);
    assert.deepEqual(json<Listing>(byCursor).audit_events, json<Listing>(second).audit_events);
    const last = await own('/audit-events?sort=occurred_at&page_size=100');
    assert.equal(json<Listing>(last).next_cursor, null, 'null at the end');

    const events = await everything('occurred_at');
    const opWs = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=2&starting_after=${events[1]!.id}`);
    assert.equal(opWs.statusCode, 200, opWs.body);
    assert.deepEqual(json<Listing>(opWs).audit_events.map((e) => e.id), [events[2]!.id, events[3]!.id]);
    assert.equal('total_count' in json<Listing>(opWs) || 'pagination' in json<Listing>(opWs), false, 'read by cursor, nothing is counted');
    const opAll = await ctx.admin('GET', `/audit-events?page_size=1&workspace=${ws.subdomain}&starting_after=${events[1]!.id}`);
    assert.deepEqual(json<Listing>(opAll).audit_events.map((e) => [e.id, e.workspace]), [[events[2]!.id, ws.subdomain]]);
    assert.equal(nextLink(opAll.headers.link as string)?.includes(`starting_after=${events[2]!.id}`), true);
  });

  test('the JSON Lines export is the listing, oldest first, with its headers; filters narrow it', async () => {
    const res = await own('/audit-events/export?format=jsonl');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/x-ndjson');
    assert.equal(res.headers['content-disposition'], `attachment; filename="audit-events-${ws.subdomain}.jsonl"`);
    const lines = res.body.split('\n');
    assert.equal(lines.pop(), '', 'every line ends with a newline');
    assert.deepEqual(lines.map((line) => json<Event>(line)), await everything('occurred_at'));

    const events = await everything('occurred_at');
    const since = events[2]!.occurred_at;
    const narrowed = await own(`/audit-events/export?action=user.created&since=${encodeURIComponent(since)}`);
    assert.deepEqual(
      narrowed.body.trim().split('\n').map((line) => json<Event>(line).id),
      events.filter((e) => e.action === 'user.created' && e.occurred_at >= since).map((e) => e.id),
    );
    const none = await own('/audit-events/export?until=2000-01-01T00:00:00Z');
    assert.equal(none.statusCode, 200);
    assert.equal(none.body, '');

    const operator = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events/export`);
    assert.equal(operator.body, res.body, "the operator's per-workspace export is the workspace's own");
  });

  test('the CSV export: a header, one row per event, formula-like cells quoted, commas, quotes and newlines kept', async () => {
    const target = await ctx.createWorkspace('csv');
    await addUser(target, '=cmd@example.com', { first_name: 'Ada, "the first"\nLovelace', last_name: '-' });
    await addUser(target, '+sum@example.com', { first_name: '@import' });
    const res = await own('/audit-events/export?format=csv', target);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
    assert.equal(res.headers['content-disposition'], `attachment; filename="audit-events-${target.subdomain}.csv"`);
    const rows: Record<string, string>[] = parse(res.body, { columns: true });
    const events = await everything('occurred_at', target);
    assert.deepEqual(Object.keys(rows[0]!), [
      'id', 'occurred_at', 'actor_type', 'actor_id', 'actor_label', 'request_id', 'action', 'target_type', 'target_id', 'user_id', 'before', 'after',
    ]);
    assert.deepEqual(rows.map((r) => Number(r.id)), events.map((e) => e.id));
    const created = rows.filter((r) => r.action === 'user.created');
    assert.deepEqual(created.map((r) => r.target_id), ["'=cmd@example.com", "'+sum@example.com"]);
    for (const row of rows) {
      const event = events.find((e) => e.id === Number(row.id))!;
      assert.equal(row.occurred_at, event.occurred_at);
      assert.deepEqual(row.after === '' ? null : JSON.parse(row.after!), event.after);
      assert.deepEqual(row.before === '' ? null : JSON.parse(row.before!), event.before);
    }
    assert.equal((JSON.parse(created[0]!.after!) as { first_name: string }).first_name, 'Ada, "the first"\nLovelace');
  });

  test("the operator's export of every workspace names each event's workspace; workspace narrows it", async () => {
    const res = await ctx.admin('GET', '/audit-events/export');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-disposition'], 'attachment; filename="audit-events-all.jsonl"');
    const exported = res.body.trim().split('\n').map((line) => json<Event>(line));
    const listed: Event[] = [];
    for (let page = 1; ; page += 1) {
      const items = json<Listing>(await ctx.admin('GET', `/audit-events?page_size=100&page_number=${page}`)).audit_events;
      if (items.length === 0) break;
      listed.push(...items);
    }
    assert.deepEqual(exported, listed);
    assert.ok(exported.some((e) => e.workspace === ws.subdomain));

    const one = await ctx.admin('GET', `/audit-events/export?format=csv&workspace=${ws.subdomain}`);
    const rows: Record<string, string>[] = parse(one.body, { columns: true });
    assert.equal(Object.keys(rows[0]!)[2], 'workspace');
    assert.ok(rows.every((r) => r.workspace === ws.subdomain));
    assert.deepEqual(rows.map((r) => Number(r.id)), (await everything('occurred_at')).map((e) => e.id));
    const nobody = await ctx.admin('GET', '/audit-events/export?workspace=no-such-workspace');
    assert.equal(nobody.statusCode, 200);
    assert.equal(nobody.body, '');
  });

  test('an export reads in batches: more events than one batch arrive whole and in order', async () => {
    const target = await ctx.createWorkspace('batches');
    const workspaceId = (await ctx.store.workspaces.findBySubdomain(target.subdomain))!.id;
    await ctx.database.db.execute(
      // Seeded by SQL: 2,500 events through the API would take minutes.
      (await import('drizzle-orm')).sql`insert into audit_events (workspace_id, actor_type, action, target_type, target_id)
        select ${workspaceId}, 'system', 'test.seeded', 'test', 'row-' || n from generate_series(1, 2500) as n`,
    );
    const res = await own('/audit-events/export?action=test.seeded', target);
    const ids = res.body.trim().split('\n').map((line) => json<Event>(line));
    assert.equal(ids.length, 2500);
    assert.deepEqual(ids.map((e) => e.target_id), Array.from({ length: 2500 }, (_, i) => `row-${i + 1}`));
  });
});
