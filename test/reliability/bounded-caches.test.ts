// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyedTokenBuckets } from '../../src/rate-limits/memory-token-buckets.ts';

/*
 * The in-memory rate limits keep a bucket per key in a bounded LRU (docs/operations.md: memory
 * stays flat however many keys are seen): past the bound the least recently used key's bucket
 * goes, and comes back full. The bound costs nothing until keys arrive: a process makes several
 * such caches of 100,000 keys each, and one that allocated its bound up front held about 2.7 MB
 * (1.2 MB of them typed arrays) whether one key was seen or none.
 */

describe('bounded in-memory caches', () => {
  test('past maxKeys the least recently used key is dropped, and its bucket comes back full', () => {
    const buckets = new KeyedTokenBuckets(1, 1, 60_000, 2);
    assert.equal(buckets.take('a').allowed, true);
    assert.equal(buckets.take('a').allowed, false, 'one token a minute: the second take is refused');
    assert.equal(buckets.take('b').allowed, true);
    assert.equal(buckets.take('c').allowed, true, 'a third key: a, the least recently used, is dropped');
    assert.equal(buckets.take('b').allowed, false, 'b is kept: still empty');
    assert.equal(buckets.take('a').allowed, true, 'a was dropped: its bucket came back full');
  });

  test('a cache of 100,000 keys allocates nothing up front', () => {
    const before = process.memoryUsage().arrayBuffers;
    const caches = Array.from({ length: 10 }, () => new KeyedTokenBuckets(10, 10, 1000, 100_000));
    const grown = process.memoryUsage().arrayBuffers - before;
    assert.equal(caches.length, 10);
    assert.ok(grown < 1_000_000, `ten empty caches took ${grown} bytes of array buffers`);
  });
});
