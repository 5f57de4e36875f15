// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import type { StreamedAuditEvent } from '../../src/core/audit-streams/audit-stream-repository.ts';
import { pickBatch, scanOf } from '../../src/core/audit-streams/stream-batch.ts';

/*
 * A stream's batch picked from the rows read after its cursor (docs/api.md, "Audit streams"):
 * the stream's actions only, at most its batch size, and the cursor's next position, which
 * passes rows of other actions and, once the read came back short, every id through the
 * settled horizon. A read shared with a stream of larger batches picks as a read of the
 * stream's own size would.
 */

const row = (id: number, action = 'user.created'): StreamedAuditEvent => ({
  id,
  workspaceId: 1,
  workspace: 'acme',
  occurredAt: new Date(1_700_000_000_000 + id),
  actor: SYSTEM_ACTOR,
  action,
  targetType: 'user',
  targetId: `u${id}`,
  userId: null,
  before: null,
  after: null,
});
const ids = (rows: readonly StreamedAuditEvent[]) => rows.map((r) => r.id);

describe('picking a stream batch from the rows read after its cursor', () => {
  test('a short read: every row, and the cursor moves to the settled horizon past the gaps after the last', () => {
    const batch = pickBatch([row(11), row(12), row(14)], { cursor: 10, actions: null }, 5, 20);
    assert.deepEqual(ids(batch.rows), [11, 12, 14]);
    assert.equal(batch.through, 20);
  });

  test('nothing read: no row, and the cursor still moves to the horizon', () => {
    assert.deepEqual(pickBatch([], { cursor: 10, actions: null }, 5, 20), { rows: [], through: 20 });
  });

  test("rows of other actions are passed over: the cursor moves past them, and they are not sent", () => {
    const read = [row(11, 'user.created'), row(12, 'user.updated'), row(13, 'user.deactivated'), row(14, 'user.updated')];
    const batch = pickBatch(read, { cursor: 10, actions: ['user.created', 'user.deactivated'] }, 5, 14);
    assert.deepEqual(ids(batch.rows), [11, 13]);
    assert.equal(batch.through, 14);
  });

  test('a full batch ends at its last row looked at: the next wanted row waits for the next batch', () => {
    const read = [row(11), row(12, 'user.updated'), row(13), row(14, 'user.updated'), row(15)];
    const batch = pickBatch(read, { cursor: 10, actions: ['user.created'] }, 2, 99);
    assert.deepEqual(ids(batch.rows), [11, 13]);
    assert.equal(batch.through, 14, 'past 14, an unwanted row, but not 15');
  });

  test('a read as long as the scan is not short: the cursor stops at the last row read, not the horizon', () => {
    const read = Array.from({ length: scanOf(2) }, (_, i) => row(11 + i, 'user.updated'));
    const batch = pickBatch(read, { cursor: 10, actions: ['user.created'] }, 2, 1_000);
    assert.deepEqual(batch.rows, []);
    assert.equal(batch.through, 10 + scanOf(2));
  });

  test('a longer read shared with a stream of larger batches picks as a read of its own scan would', () => {
    const long = Array.from({ length: scanOf(2) + 3 }, (_, i) => row(11 + i, i === scanOf(2) + 1 ? 'user.created' : 'user.updated'));
    const own = long.slice(0, scanOf(2));
    const stream = { cursor: 10, actions: ['user.created'] } as const;
    assert.deepEqual(pickBatch(long, stream, 2, 1_000), pickBatch(own, stream, 2, 1_000));
    assert.equal(pickBatch(long, stream, 2, 1_000).through, 10 + scanOf(2), 'not past the rows beyond its own scan');
  });
});
