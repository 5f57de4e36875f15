import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { createScheduler } from '../../src/server/scheduler.ts';
import { BACKEND } from '../helpers/test-context.ts';

/*
 * The scheduler of a process's periodic work (docs/architecture.md, "What runs in the
 * background"): a task's passes never overlap, a failed pass is logged and retried, a pass may
 * choose the delay to the next, a pass can be moved sooner, and after `stop` (which waits for
 * the passes under way, and tells them to end early) nothing runs.
 */

/** A log that keeps the warnings. */
function captureLog() {
  const warnings: Array<{ fields: object; message: string }> = [];
  return { warnings, warn: (fields: object, message: string) => void warnings.push({ fields, message }) };
}

describe(`the scheduler of periodic work [${BACKEND}]`, () => {
  test('passes of one task never overlap; a failed pass is logged with the task name and the next one runs', async () => {
    const log = captureLog();
    const scheduler = createScheduler(log);
    let running = 0;
    let most = 0;
    let passes = 0;
    scheduler.add({
      name: 'slow',
      intervalMs: 5,
      firstDelayMs: 0,
      run: async () => {
        running += 1;
        most = Math.max(most, running);
        passes += 1;
        await sleep(30);
        running -= 1;
        if (passes === 1) throw new Error('first pass fails');
      },
    });
    await sleep(200);
    await scheduler.stop();
    assert.equal(most, 1, 'one pass at a time');
    assert.ok(passes >= 2, `the pass after the failure ran (${passes} passes)`);
    assert.equal(log.warnings.length, 1);
    assert.deepEqual((log.warnings[0]!.fields as { task: string }).task, 'slow');
  });

  test('a pass chooses the delay to the next; runIn moves the next pass sooner', async () => {
    const scheduler = createScheduler(captureLog());
    const at: number[] = [];
    const started = Date.now();
    const job = scheduler.add({
      name: 'chooses',
      intervalMs: 60_000,
      firstDelayMs: 0,
      run: async () => {
        at.push(Date.now() - started);
        return at.length === 1 ? 20 : 60_000;
      },
    });
    await sleep(150);
    assert.equal(at.length, 2, 'the second pass came after the 20 ms the first chose, not the interval');
    job.runIn(0);
    await sleep(50);
    assert.equal(at.length, 3, 'moved from a minute to now');
    await scheduler.stop();
  });

  test('stop waits for the pass under way, aborts its signal, and no pass runs after it', async () => {
    const scheduler = createScheduler(captureLog());
    let passes = 0;
    let ended = false;
    let aborted = false;
    scheduler.add({
      name: 'long',
      intervalMs: 5,
      firstDelayMs: 0,
      run: async (stopping) => {
        passes += 1;
        while (!stopping.aborted) await sleep(5);
        aborted = true;
        await sleep(20);
        ended = true;
      },
    });
    await sleep(30);
    await scheduler.stop();
    assert.ok(aborted && ended, 'stop resolved after the pass ended');
    const after = passes;
    await sleep(50);
    assert.equal(passes, after, 'no pass after stop');
  });
});
