import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Logger } from '../../src/core/logger.ts';
import { hashSessionId } from '../../src/core/sessions/sessions-service.ts';
import { createEventPruning } from '../../src/storage/events.queries.ts';
import { createSessionPruning } from '../../src/storage/sessions-pruning.queries.ts';
import { startEventPruner } from '../../src/webhooks/event-pruner.ts';
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
    await age('operator_sign_ins', 'state_hash', 'sign-in-old', "expires_at = now() - interval '25 hours'");

    const pruner = startEventPruner({
      events: createEventPruning(ctx.database.db),
      sessions: { pruning: createSessionPruning(ctx.database.db), idleMs },
      intervalMs: HOUR_MS,
      log: QUIET,
    });
    try {
      assert.equal(await pruner.pruneNow(), 5, 'three workspace sessions, one operator session, one sign-in');
    } finally {
      await pruner.stop();
    }
    assert.deepEqual((await remaining('console_sessions', 'id_hash')).sort(), [live, signedOutJustNow].sort());
    assert.deepEqual(await remaining('operator_sessions', 'id_hash'), ['op-live']);
    assert.deepEqual(await remaining('operator_sign_ins', 'state_hash'), ['sign-in-fresh']);
  });
});
