import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { changeRecord } from '../../src/core/users/users-service.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Concurrent changes of one workspace's users written together (docs/architecture.md, "Changes
 * written together"; docs/performance.md, "Several changes in one statement"): each change keeps
 * its own outcome, version, audit entry and event, as if it had been written alone, and a batch
 * the database refuses as a whole is written change by change.
 */
describe(`changes of one workspace's users written together [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  async function workspaceWith(count: number, prefix: string): Promise<{ ws: TestWorkspace; emails: string[] }> {
    const ws = await ctx.createWorkspace(prefix);
    const emails = Array.from({ length: count }, (_, i) => `${prefix}${i}@example.com`);
    for (const email of emails) {
      const res = await ctx.api(ws, 'POST', '/users', { body: userBody(email, { first_name: 'Old' }) });
      assert.equal(res.statusCode, 201, res.body);
    }
    return { ws, emails };
  }

  const patch = (ws: TestWorkspace, email: string, user: Record<string, unknown>) =>
    ctx.api(ws, 'PATCH', `/users/${encodeURIComponent(email)}`, { body: { user } });

  /** The workspace's events of `type`, in sequence order. */
  async function eventsOf(ws: TestWorkspace, type: string) {
    return rowsOf<{ sequence: number; email: string; first_name: string; previous: Record<string, unknown> | null; created_at: string }>(
      await ctx.database.db.execute(sql`select e.sequence::int4 as sequence, e.data->'user'->>'email' as email,
          e.data->'user'->>'first_name' as first_name, e.data->'previous' as previous, e.created_at::text as created_at
        from events e join workspaces w on w.id = e.workspace_id
        where w.subdomain = ${ws.subdomain} and e.type = ${type} order by e.sequence`),
    );
  }

  /** The workspace's audit entries of `action`: target and the first names before and after. */
  async function auditOf(ws: TestWorkspace, action: string) {
    return rowsOf<{ target_id: string; before_name: string; after_name: string; after_status: string }>(
      await ctx.database.db.execute(sql`select a.target_id, a.before->>'first_name' as before_name,
          a.after->>'first_name' as after_name, a.after->>'status' as after_status
        from audit_events a join workspaces w on w.id = a.workspace_id
        where w.subdomain = ${ws.subdomain} and a.action = ${action} `),
    );
  }

  test('concurrent PATCHes of different users: each answered and stored with its own version, audit entry and event', async () => {
    const { ws, emails } = await workspaceWith(12, 'batch');
    const answers = await Promise.all(emails.map((email, i) => patch(ws, email, { first_name: `New${i}` })));
    answers.forEach((res, i) => {
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(json<'updateUser'>(res).first_name, `New${i}`);
      assert.equal(res.headers.etag, '"2"', 'one version more than the add');
    });
    for (const [i, email] of emails.entries()) {
      const stored = await ctx.api(ws, 'GET', `/users/${encodeURIComponent(email)}`);
      assert.equal(json<'getUser'>(stored).first_name, `New${i}`);
      assert.equal(stored.headers.etag, '"2"');
    }

    const events = await eventsOf(ws, 'user.updated');
    assert.equal(events.length, 12);
    const created = await eventsOf(ws, 'user.created');
    // The workspace's sequence has no gap and no repeat: the adds' 1…12, then the changes' 13…24.
    assert.deepEqual(
      [...created, ...events].map((e) => e.sequence),
      Array.from({ length: 24 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      events.map((e) => [e.email, e.first_name, e.previous]).sort(),
      emails.map((email, i) => [email, `New${i}`, { first_name: 'Old' }]).sort(),
    );
    const byTarget = (a: { target_id: string }, b: { target_id: string }) => (a.target_id < b.target_id ? -1 : 1);
    assert.deepEqual(
      (await auditOf(ws, 'user.updated')).sort(byTarget),
      emails.map((email, i) => ({ target_id: email, before_name: 'Old', after_name: `New${i}`, after_status: 'active' })).sort(byTarget),
    );
  });

  test('concurrent deactivations: each user deactivated once, the counts exact, one event each', async () => {
    const { ws, emails } = await workspaceWith(14, 'gone');
    const removed = emails.slice(0, 10);
    const answers = await Promise.all(removed.map((email) => ctx.api(ws, 'DELETE', `/users/${encodeURIComponent(email)}`)));
    for (const res of answers) assert.equal(res.statusCode, 204, res.body);

    const listed = async (status: string) =>
      json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status, page_size: '100' } }));
    const active = await listed('active');
    const deactivated = await listed('deactivated');
    assert.equal(active.total_count, 4);
    assert.equal(deactivated.total_count, 10);
    assert.deepEqual(deactivated.users.map((u) => u.email).sort(), [...removed].sort());
    const events = await eventsOf(ws, 'user.deactivated');
    assert.deepEqual(events.map((e) => e.email).sort(), [...removed].sort());
    assert.deepEqual(
      (await auditOf(ws, 'user.deactivated')).map((a) => [a.target_id, a.after_status]).sort(),
      [...removed].sort().map((email) => [email, 'deactivated']),
    );
  });

  test('two changes of one user among others at once: both applied, one after the other', async () => {
    const { ws, emails } = await workspaceWith(6, 'twice');
    const [target, ...others] = emails;
    const answers = await Promise.all([
      ...others.map((email) => patch(ws, email, { first_name: 'Other' })),
      patch(ws, target!, { first_name: 'First' }),
      patch(ws, target!, { last_name: 'Last' }),
    ]);
    for (const res of answers) assert.equal(res.statusCode, 200, res.body);
    const stored = await ctx.api(ws, 'GET', `/users/${encodeURIComponent(target!)}`);
    const user = json<'getUser'>(stored);
    assert.equal(user.first_name, 'First');
    assert.equal(user.last_name, 'Last');
    assert.equal(stored.headers.etag, '"3"', 'two versions more than the add');
    assert.equal((await eventsOf(ws, 'user.updated')).filter((e) => e.email === target).length, 2);
  });

  /**
   * Submits a change of the first name of each of `emails` to `names[i]` at once, through the
   * store as the service calls it; each change's outcome.
   */
  async function writeAtOnce(ws: TestWorkspace, emails: readonly string[], names: readonly string[]) {
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    const actor = { type: 'api_key' as const, id: 'test', label: 'test', requestId: null };
    const currents = await Promise.all(emails.map((email) => ctx.store.users.find(workspace.id, { email })));
    return Promise.allSettled(
      currents.map((current, i) => {
        const next = { ...current!, firstName: names[i]! };
        return ctx.store.users.writeIfUnchanged(workspace.id, current!, next, changeRecord(workspace.id, actor, 'user.updated', current!.id, current!, next));
      }),
    );
  }

  test('changes submitted at once: the first starts alone, the rest wait for it and are written in one statement', async () => {
    const { ws, emails } = await workspaceWith(10, 'once');
    const outcomes = await writeAtOnce(ws, emails, emails.map((_, i) => `Once${i}`));
    outcomes.forEach((outcome, i) => {
      assert.equal(outcome.status, 'fulfilled');
      const written = (outcome as PromiseFulfilledResult<{ firstName: string; version: number } | undefined>).value;
      assert.deepEqual([written?.firstName, written?.version], [`Once${i}`, 2]);
    });
    const events = await eventsOf(ws, 'user.updated');
    assert.deepEqual(events.map((e) => e.email).sort(), [...emails].sort());
    // Changes of one statement share its start time; statements never do. One batch of a
    // workspace runs at a time: the first change starts alone, the other nine wait for it and go together.
    assert.equal(new Set(events.map((e) => e.created_at)).size, 2, 'two statements');
  });

  test('a batch the database refuses is written change by change: only the refused change fails', async () => {
    const { ws, emails } = await workspaceWith(6, 'refused');
    // A rule of the database that no check of the service knows: the batch holding the refused change fails as a whole.
    await ctx.database.db.execute(sql.raw(`alter table users add constraint test_refused_name check (first_name <> 'Refused') not valid`));
    let outcomes;
    try {
      // The first starts alone, the others wait and go as one batch, the refused change last.
      outcomes = await writeAtOnce(ws, emails, emails.map((_, i) => (i === emails.length - 1 ? 'Refused' : `Kept${i}`)));
    } finally {
      await ctx.database.db.execute(sql.raw('alter table users drop constraint test_refused_name'));
    }
    outcomes.slice(0, -1).forEach((outcome, i) => {
      assert.equal(outcome.status, 'fulfilled', String((outcome as PromiseRejectedResult).reason));
      assert.equal((outcome as PromiseFulfilledResult<{ firstName: string } | undefined>).value?.firstName, `Kept${i}`);
    });
    const refused = outcomes.at(-1)!;
    assert.equal(refused.status, 'rejected');
    const reason = (refused as PromiseRejectedResult).reason as { cause?: { message?: string } };
    assert.match(String(reason.cause?.message ?? reason), /test_refused_name/);
    for (const [i, email] of emails.entries()) {
      const stored = await ctx.api(ws, 'GET', `/users/${encodeURIComponent(email)}`);
      assert.equal(json<'getUser'>(stored).first_name, i === emails.length - 1 ? 'Old' : `Kept${i}`);
    }
    const events = await eventsOf(ws, 'user.updated');
    assert.deepEqual(events.map((e) => e.email).sort(), emails.slice(0, -1).sort(), 'no event of the refused change');
    assert.equal((await auditOf(ws, 'user.updated')).length, 5, 'no audit entry of the refused change');
  });

  /** Adds each of `users` at once, through the store as the service's add calls it; each add's outcome. */
  async function addAtOnce(ws: TestWorkspace, users: ReadonlyArray<{ email: string; apps: Array<{ name: string; role: string; expiresAt?: Date }> }>) {
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    const actor = { type: 'api_key' as const, id: 'test', label: 'test', requestId: null };
    return Promise.allSettled(
      users.map(({ email, apps }) => {
        const user = { email, role: 'non_owner' as const, firstName: 'Added', lastName: 'Together', apps, status: 'active' as const, externalId: null, scimAttributes: null, scimDeleted: false, expiresAt: null };
        const id = crypto.randomUUID();
        return ctx.store.users.insertIfAbsent(workspace.id, id, user, changeRecord(workspace.id, actor, 'user.created', id, undefined, user));
      }),
    );
  }

  test('adds submitted at once: each added with its apps, count, audit entry and event, in two statements', async () => {
    const ws = await ctx.createWorkspace('adds');
    const ends = new Date(Date.now() + 86_400_000);
    const users = Array.from({ length: 8 }, (_, i) => ({
      email: `add${i}@example.com`,
      apps: i % 2 === 0 ? [{ name: 'crm', role: 'member' }, { name: 'analytics', role: 'viewer', expiresAt: ends }] : [],
    }));
    const outcomes = await addAtOnce(ws, users);
    for (const outcome of outcomes) assert.equal(outcome.status, 'fulfilled');
    const listed = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { page_size: '100' } }));
    assert.equal(listed.total_count, 8);
    for (const [i, { email, apps }] of users.entries()) {
      const stored = json<'getUser'>(await ctx.api(ws, 'GET', `/users/${encodeURIComponent(email)}`));
      assert.deepEqual(
        stored.apps,
        apps.map((a) => (a.expiresAt ? { name: a.name, role: a.role, expires_at: a.expiresAt.toISOString() } : { name: a.name, role: a.role })),
        `apps of user ${i}`,
      );
    }
    const events = await eventsOf(ws, 'user.created');
    assert.deepEqual(events.map((e) => e.sequence), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(events.map((e) => e.email).sort(), users.map((u) => u.email).sort());
    assert.equal((await auditOf(ws, 'user.created')).length, 8);
    assert.equal(new Set(events.map((e) => e.created_at)).size, 2, 'the first add alone, the other seven together');
  });

  test('adds at once that the statement refuses (an email taken, in the batch or before; a role the catalogue lacks) get no user, the others are added', async () => {
    const ws = await ctx.createWorkspace('refusedadd');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('taken@example.com') })).statusCode, 201);
    const member = [{ name: 'crm', role: 'member' }];
    const outcomes = await addAtOnce(ws, [
      { email: 'first@example.com', apps: member },
      { email: 'taken@example.com', apps: member },
      { email: 'twice@example.com', apps: member },
      { email: 'TWICE@example.com', apps: member },
      { email: 'unknown-role@example.com', apps: [{ name: 'crm', role: 'no-such-role' }] },
      { email: 'kept@example.com', apps: member },
    ]);
    const added = outcomes.map((o) => (o.status === 'fulfilled' ? (o.value?.email ?? null) : 'rejected'));
    assert.deepEqual(added, ['first@example.com', null, 'twice@example.com', null, null, 'kept@example.com']);
    const listed = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { page_size: '100' } }));
    assert.deepEqual(listed.users.map((u) => u.email).sort(), ['first@example.com', 'kept@example.com', 'taken@example.com', 'twice@example.com']);
    assert.equal((await eventsOf(ws, 'user.created')).length, 4, 'an event for each user added, none for the refused');
    assert.equal((await auditOf(ws, 'user.created')).length, 4);
  });

  test('look-ups at once, by email in any case and by id, found or not: each gets its own user, with its apps', async () => {
    const { ws, emails } = await workspaceWith(5, 'look');
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    const byId = (await ctx.store.users.find(workspace.id, { email: emails[4]! }))!;
    const found = await Promise.all([
      ...emails.slice(0, 4).map((email, i) => ctx.store.users.find(workspace.id, { email: i % 2 === 0 ? email : email.toUpperCase() })),
      ctx.store.users.find(workspace.id, { email: 'nobody@example.com' }),
      ctx.store.users.find(workspace.id, { id: byId.id }),
      ctx.store.users.find(workspace.id, { id: crypto.randomUUID() }),
      ctx.store.users.find(workspace.id, { email: emails[0]! }),
    ]);
    assert.deepEqual(
      found.map((user) => user && [user.email, user.firstName, user.apps.map((a) => `${a.name}:${a.role}`), user.version]),
      [
        ...emails.slice(0, 4).map((email) => [email, 'Old', ['crm:member'], 1]),
        undefined,
        [emails[4], 'Old', ['crm:member'], 1],
        undefined,
        [emails[0], 'Old', ['crm:member'], 1],
      ],
    );
    // Another workspace's user is never found, even looked up at once with this workspace's.
    const other = await workspaceWith(1, 'lookother');
    const otherWorkspace = (await ctx.store.workspaces.findBySubdomain(other.ws.subdomain))!;
    const [mine, theirs] = await Promise.all([
      ctx.store.users.find(workspace.id, { email: other.emails[0]! }),
      ctx.store.users.find(otherWorkspace.id, { email: other.emails[0]! }),
    ]);
    assert.equal(mine, undefined);
    assert.equal(theirs?.email, other.emails[0]);
  });
});
