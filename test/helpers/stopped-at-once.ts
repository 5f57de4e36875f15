import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Starts a background worker and stops it at once, three times (the first look may find work an
 * earlier test left): while its first claim is still in flight, `stop` finds no wait to cut
 * short, and must settle then, not after the worker's next poll. Fails when a stop has not
 * settled within 5 s.
 */
export async function assertStopsAtOnce(start: () => { stop(): Promise<void> }): Promise<void> {
  for (let i = 0; i < 3; i += 1) {
    const stopped = await Promise.race([start().stop().then(() => 'stopped'), sleep(5_000, 'still running after 5 s')]);
    assert.equal(stopped, 'stopped');
  }
}
