// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { databaseFreeNodeOptions, isDatabaseFree } from '../../scripts/database-free.ts';

/** Runs `code` as an ES module in a Node process with the database-free run's options; its exit and output. */
async function runGuarded(code: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', code], {
      env: { ...process.env, NODE_OPTIONS: databaseFreeNodeOptions(undefined) },
    });
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: String((error as { stderr?: string }).stderr) };
  }
}

describe('database-free test files (docs/architecture.md, "Tests")', () => {
  test('a marked file is recognised, an unmarked one is not', () => {
    assert.equal(isDatabaseFree(fileURLToPath(import.meta.url)), true);
    assert.equal(isDatabaseFree(fileURLToPath(new URL('../http/read-cache.test.ts', import.meta.url))), false);
  });

  test('their run cannot load pg or PGlite, in the test process or a process it starts', async () => {
    for (const driver of ['pg', '@electric-sql/pglite']) {
      const refused = await runGuarded(`await import(${JSON.stringify(driver)});`);
      assert.equal(refused.ok, false, `${driver} loaded`);
      assert.match(refused.output, /a database-free test loaded the database driver/);
    }
    const allowed = await runGuarded(`await import('ajv'); console.log('loaded');`);
    assert.deepEqual(allowed, { ok: true, output: 'loaded\n' });
  });
});
