// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { databaseFreeNodeOptions, isDatabaseFree } from '../../scripts/database-free.ts';
import { oneBackendOf } from '../../scripts/test-backends.ts';

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

describe('test files that run on one backend (docs/architecture.md, "Tests")', () => {
  const testDir = fileURLToPath(new URL('..', import.meta.url));
  const files = readdirSync(testDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(testDir, f));

  test('a marked file is recognised with its backend, an unmarked one runs on both', () => {
    assert.equal(oneBackendOf(join(testDir, 'e2e/failover.test.ts')), 'postgres');
    assert.equal(oneBackendOf(join(testDir, 'console/console.test.ts')), 'pglite');
    assert.equal(oneBackendOf(join(testDir, 'http/read-cache.test.ts')), undefined);
  });

  test('no marked file holds tests for the other backend, which would never run', () => {
    const unreachable = files.flatMap((file) => {
      const backend = oneBackendOf(file);
      if (!backend) return [];
      const other = backend === 'pglite' ? 'postgres' : 'pglite';
      return readFileSync(file, 'utf8').includes(`BACKEND === '${other}'`) ? [file.slice(testDir.length)] : [];
    });
    assert.deepEqual(unreachable, []);
  });

  test('no file is marked both database-free and for one backend', () => {
    assert.deepEqual(files.filter((file) => isDatabaseFree(file) && oneBackendOf(file)).map((file) => file.slice(testDir.length)), []);
  });
});
