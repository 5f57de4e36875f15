import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Logger } from '../../src/core/logger.ts';
import { hashSessionId } from '../../src/core/sessions/sessions-service.ts';
import { createEventPruning } from '../../src/storage/events.queries.ts';
import { createSessionPruning } from '../../src/storage/sessions-pruning.queries.ts';
import { createAuditPruning } from '../../src/storage/audit-pruning.queries.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { retentionPass } from '../../src/server/retention.ts';
import { API, BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';

const QUIET: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const HOUR_MS = 3_600_000;

/*
 * The pruner's pass deletes console sessions and sign-ins under way once they have been over for
 * a day (signed out, past their absolute end, idle too long, expired), and keeps live ones and
 * those that ended only just (docs/security.md, "Console sessions").
 */
describe(`pruning of ended console sessions [${BACKEND}]`, () => {
  let ctx: TestContext;
  const idleMs = 8 * HOUR_MS;

  before(async () => {
    ctx = await createTestContext();
  });
  after(() => ctx.close());

  /** Opens a key session of `ws` and returns the hash of its id, as stored. */
  async function keySession(ws: TestWorkspace): Promise<string> {
    const res = await ctx.app.inject({ method: 'POST', url: `${API}/console/session`, headers: { host: ws.host, 'x-api-key': ws.apiKey, origin: `http://${ws.host}` } });
    assert.equal(res.statusCode, 201, res.body);
    return hashSessionId((res.headers['set-cookie'] as string).split(';', 1)[0]!.split('=')[1]!);
  }

  const age = (table: string, key: string, hash: string, set: string) =>
    ctx.database.db.execute(sql`update ${sql.identifier(table)} set ${sql.raw(set)} where ${sql.identifier(key)} = ${hash}`);

  async function remaining(table: string, key: string): Promise<string[]> {
    const result = (await ctx.database.db.execute(sql`select ${sql.identifier(key)} as k from ${sql.identifier(table)}`)) as unknown as { rows: Array<{ k: string }> };
    return result.rows.map((r) => r.k);
  }

  async function operatorSession(hash: string): Promise<void> {
    const actor = { type: 'operator' as const, id: 'oidc:ada', label: 'ada@example.com' };
    await ctx.store.operatorSessions.insert({ idHash: hash, email: 'ada@example.com', issuer: 'https://login.example.com', actor, expiresAt: new Date(Date.now() + HOUR_MS) });
  }

  test('sessions and sign-ins over for more than a day are deleted in the pruner pass; live and recently ended ones stay', async () => {
    const ws = await ctx.createWorkspace('prune');
    const live = await keySession(ws);
    const signedOutLongAgo = await keySession(ws);
    const signedOutJustNow = await keySession(ws);
    const expiredLongAgo = await keySession(ws);
    const idleLongAgo = await keySession(ws);
    await age('console_sessions', 'id_hash', signedOutLongAgo, "ended_at = now() - interval '25 hours'");
    await age('console_sessions', 'id_hash', signedOutJustNow, "ended_at = now() - interval '1 hour'");
    await age('console_sessions', 'id_hash', expiredLongAgo, "expires_at = now() - interval '25 hours'");
    await age('console_sessions', 'id_hash', idleLongAgo, "last_seen_at = now() - interval '34 hours'");

    await operatorSession('op-live');
    await operatorSession('op-ended');
    await age('operator_sessions', 'id_hash', 'op-ended', "ended_at = now() - interval '2 days'");
    await ctx.store.operatorSessions.saveSignIn('sign-in-fresh', { codeVerifier: 'v', nonce: 'n', expiresAt: new Date(Date.now() + 600_000) });
    await ctx.store.operatorSessions.saveSignIn('sign-in-old', { codeVerifier: 'v', nonce: 'n', expiresAt: new Date(Date.now() + 600_000) });
    // Never completed and expired a minute ago: swept at once, unlike a session's day.
    await ctx.store.operatorSessions.saveSignIn('sign-in-just-expired', { codeVerifier: 'v', nonce: 'n', expiresAt: new Date(Date.now() + 600_000) });
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    const revision = '00000000-0000-4000-8000-000000000001';
    for (const state of ['ws-sign-in-fresh', 'ws-sign-in-expired']) {
      await ctx.store.identityProviders.saveSignIn(workspace.id, state, { codeVerifier: 'v', nonce: 'n', idpRevision: revision, expiresAt: new Date(Date.now() + 600_000) });
    }
    await age('operator_sign_ins', 'state_hash', 'sign-in-old', "expires_at = now() - interval '25 hours'");
    await age('operator_sign_ins', 'state_hash', 'sign-in-just-expired', "expires_at = now() - interval '1 minute'");
    await age('oidc_sign_ins', 'state_hash', 'ws-sign-in-expired', "expires_at = now() - interval '1 minute'");

    const prune = retentionPass({
      events: createEventPruning(ctx.database.db),
      sessions: { pruning: createSessionPruning(ctx.database.db), idleMs },
      log: QUIET,
    });
    assert.equal(await prune(), 7, 'three workspace sessions, one operator session, three sign-ins');
    assert.deepEqual((await remaining('console_sessions', 'id_hash')).sort(), [live, signedOutJustNow].sort());
    assert.deepEqual(await remaining('operator_sessions', 'id_hash'), ['op-live']);
    assert.deepEqual(await remaining('operator_sign_ins', 'state_hash'), ['sign-in-fresh']);
    assert.deepEqual(await remaining('oidc_sign_ins', 'state_hash'), ['ws-sign-in-fresh']);
  });

  test('audit rows older than AUDIT_RETENTION are deleted in the pruner pass, in batches, of every kind; newer ones stay', async () => {
    const ws = await ctx.createWorkspace('audit-retention');
    await keySession(ws);
    const workspace = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!;
    // 1,205 rows past a retention of 30 days (more than one batch of 1,000), of a workspace, a
    // session and an operator, one row just inside it, and what the steps above wrote (now).
    await ctx.database.db.execute(sql`insert into audit_events (workspace_id, occurred_at, actor_type, action, target_type, target_id)
      select case when n % 3 = 0 then null else ${workspace.id}::bigint end, now() - interval '31 days' - make_interval(mins => n),
        'operator', case when n % 2 = 0 then 'console.signed_in' else 'user.created' end, 'user', 'old-' || n
      from generate_series(1, 1205) as n`);
    await ctx.database.db.execute(sql`insert into audit_events (workspace_id, occurred_at, actor_type, action, target_type, target_id)
      values (${workspace.id}, now() - interval '29 days', 'operator', 'console.signed_in', 'api_key', 'recent')`);
    const count = async (where: ReturnType<typeof sql>) =>
      ((await ctx.database.db.execute(sql`select count(*)::int as n from audit_events where ${where}`)) as unknown as { rows: Array<{ n: number }> }).rows[0]!.n;
    const total = await count(sql`true`);

    const { auditRetention } = loadConfig({ AUDIT_RETENTION: 'P30D' }).bounds;
    const prune = retentionPass({
      events: createEventPruning(ctx.database.db),
      audit: { pruning: createAuditPruning(ctx.database.db), retention: auditRetention },
      log: QUIET,
    });
    assert.equal(await prune(), 1205);
    assert.equal(await count(sql`target_id like 'old-%'`), 0, 'every row past the retention is gone');
    assert.equal(await count(sql`true`), total - 1205);
    assert.equal(await count(sql`target_id = 'recent'`), 1, 'a row inside the retention stays');
    assert.equal(await count(sql`action = 'console.signed_in' and workspace_id = ${workspace.id} and target_id <> 'recent'`), 1, 'the sign-in of this test stays');
  });

  test('the default retention (P365D) keeps a year and a day less, deletes a year and a day more', async () => {
    await ctx.database.db.execute(sql`insert into audit_events (workspace_id, occurred_at, actor_type, action, target_type, target_id) values
      (null, now() - interval '364 days', 'operator', 'console.signed_in', 'operator', 'within-a-year'),
      (null, now() - interval '366 days', 'operator', 'console.signed_in', 'operator', 'past-a-year')`);
    const pruning = createAuditPruning(ctx.database.db);
    assert.equal(await pruning.prune(loadConfig({}).bounds.auditRetention, 1000), 1);
    const left = (await ctx.database.db.execute(sql`select target_id from audit_events where target_id in ('within-a-year', 'past-a-year')`)) as unknown as { rows: Array<{ target_id: string }> };
    assert.deepEqual(left.rows.map((r) => r.target_id), ['within-a-year']);
  });
});
