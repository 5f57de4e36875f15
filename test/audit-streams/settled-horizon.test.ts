// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createSettledHorizon } from '../../src/core/audit-streams/settled-horizon.ts';

/*
 * The settled horizon (docs/operations.md, "Audit streams"): the audit ids through which every
 * row is final, from samples of the last id handed out and the transactions open then. A sample
 * settles once none of its open transactions is still open; a transaction still open holds back
 * every sample that saw it, and the horizon never goes back.
 */

describe('the settled horizon of audit ids', () => {
  test('a sample with no open transaction settles at once; one with open transactions once they have all ended', () => {
    const horizon = createSettledHorizon();
    assert.equal(horizon.observe({ lastId: 10, openTransactions: [] }), 10);
    assert.equal(horizon.observe({ lastId: 15, openTransactions: ['700', '701'] }), 10, 'its transactions are open: 11–15 may still commit');
    assert.equal(horizon.observe({ lastId: 18, openTransactions: ['701', '702'] }), 10, '701 still open');
    assert.equal(horizon.observe({ lastId: 20, openTransactions: ['702'] }), 15, '700 and 701 ended: through 15, whose sample saw only them (18 saw 702, still open)');
    assert.equal(horizon.observe({ lastId: 20, openTransactions: [] }), 20);
  });

  test('a long-open transaction holds back every later sample until it ends; then the newest it allows settles', () => {
    const horizon = createSettledHorizon();
    assert.equal(horizon.observe({ lastId: 5, openTransactions: ['40'] }), 0);
    for (let id = 6; id < 200; id += 1) assert.equal(horizon.observe({ lastId: id, openTransactions: ['40', String(id + 100)] }), 0);
    assert.equal(horizon.observe({ lastId: 200, openTransactions: ['299'] }), 198, 'the newest sample without 40 or any still open');
  });

  test('it never goes back', () => {
    const horizon = createSettledHorizon();
    assert.equal(horizon.observe({ lastId: 30, openTransactions: [] }), 30);
    assert.equal(horizon.observe({ lastId: 30, openTransactions: ['9'] }), 30);
  });
});
