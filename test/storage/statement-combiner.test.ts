import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StatementCombiner } from '../../src/storage/statement-combiner.ts';

/*
 * The statement combiner of src/storage/statement-combiner.ts: a write alone starts at once; writes that
 * arrive while a lane's batches run wait and go together; one identity is never twice in a batch;
 * each write gets its own outcome.
 */
describe('statement combiner', () => {
  /** A combiner whose batches are recorded and end when the test releases them. */
  function recordingCombiner(maxInFlight: number, maxBatch = 32) {
    const batches: Array<{ writes: Array<{ id: string; fail?: boolean }>; release: () => void }> = [];
    const combiner = new StatementCombiner<{ id: string; fail?: boolean }, string>({
      maxInFlight,
      maxBatch,
      identity: (write) => write.id,
      run: (writes) =>
        new Promise((resolve) => {
          batches.push({
            writes: [...writes],
            release: () =>
              resolve(writes.map((w) => (w.fail ? { status: 'rejected' as const, reason: new Error(`refused ${w.id}`) } : { status: 'fulfilled' as const, value: `wrote ${w.id}` }))),
          });
        }),
    });
    return { combiner, batches };
  }
  const ids = (batch: { writes: Array<{ id: string }> }) => batch.writes.map((w) => w.id);
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  test('alone a write starts at once; those that arrive while the lane is busy go together in the next batch', async () => {
    const { combiner, batches } = recordingCombiner(1);
    const first = combiner.submit('ws1', { id: 'a' });
    assert.deepEqual(batches.map(ids), [['a']], 'started without waiting');
    const rest = ['b', 'c', 'd'].map((id) => combiner.submit('ws1', { id }));
    assert.equal(batches.length, 1, 'the others wait while the lane has its batch running');
    batches[0]!.release();
    assert.equal(await first, 'wrote a');
    await settle();
    assert.deepEqual(batches.map(ids), [['a'], ['b', 'c', 'd']]);
    batches[1]!.release();
    assert.deepEqual(await Promise.all(rest), ['wrote b', 'wrote c', 'wrote d']);
  });

  test('at most maxInFlight batches of a lane at once; other lanes do not wait for it', async () => {
    const { combiner, batches } = recordingCombiner(2);
    const writes = ['a', 'b', 'c', 'd'].map((id) => combiner.submit('ws1', { id }));
    const other = combiner.submit('ws2', { id: 'x' });
    assert.deepEqual(batches.map(ids), [['a'], ['b'], ['x']]);
    batches[2]!.release();
    assert.equal(await other, 'wrote x');
    batches[0]!.release();
    await settle();
    assert.deepEqual(batches.map(ids).slice(3), [['c', 'd']]);
    batches[1]!.release();
    batches[3]!.release();
    assert.deepEqual(await Promise.all(writes), ['wrote a', 'wrote b', 'wrote c', 'wrote d']);
  });

  test('two writes of one identity never share a batch, and a batch holds at most maxBatch writes', async () => {
    const { combiner, batches } = recordingCombiner(1, 2);
    const writes = ['a', 'b', 'b', 'c', 'd'].map((id) => combiner.submit('ws1', { id }));
    for (let i = 0; i < 3; i += 1) {
      batches[i]!.release();
      await settle();
    }
    assert.deepEqual(batches.map(ids), [['a'], ['b', 'c'], ['b', 'd']]);
    assert.deepEqual(await Promise.all(writes), ['wrote a', 'wrote b', 'wrote b', 'wrote c', 'wrote d']);
  });

  test('each write gets its own outcome; a batch that fails as a whole rejects each of its writes', async () => {
    const { combiner, batches } = recordingCombiner(1);
    const first = combiner.submit('ws1', { id: 'a' });
    const kept = combiner.submit('ws1', { id: 'b' });
    const refused = combiner.submit('ws1', { id: 'c', fail: true });
    batches[0]!.release();
    await first;
    await settle();
    batches[1]!.release();
    assert.equal(await kept, 'wrote b');
    await assert.rejects(refused, /refused c/);

    const failing = new StatementCombiner<string, string>({
      maxInFlight: 1,
      maxBatch: 8,
      identity: (w) => w,
      run: () => Promise.reject(new Error('connection lost')),
    });
    await assert.rejects(failing.submit('ws1', 'a'), /connection lost/);
  });
});
