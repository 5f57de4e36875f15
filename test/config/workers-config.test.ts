// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load-config.ts';
import { TEST_SECRETS_KEY } from '../../harness/backend.ts';

/*
 * WORKERS and CACHE_TTL_MS (docs/performance.md): several processes only over PostgreSQL, since an
 * embedded PGlite data directory serves one process; the read cache can be turned off.
 */

const POSTGRES = { DATABASE_URL: 'postgres://wum@127.0.0.1:5432/wum', SECRETS_KEY: TEST_SECRETS_KEY };

describe('WORKERS and CACHE_TTL_MS', () => {
  test('defaults: one process, a 5 s read cache', () => {
    const config = loadConfig({});
    assert.equal(config.workers, 1);
    assert.equal(config.cacheTtlMs, 5000);
  });

  test('WORKERS=4 with DATABASE_URL is taken', () => {
    assert.equal(loadConfig({ ...POSTGRES, WORKERS: '4' }).workers, 4);
  });

  test('WORKERS above 1 without DATABASE_URL (embedded PGlite) is refused, naming WORKERS and DATABASE_URL', () => {
    assert.throws(
      () => loadConfig({ WORKERS: '2', DATA_DIR: './somewhere' }),
      (error: unknown) =>
        error instanceof ConfigError && /\bWORKERS\b/.test(error.message) && /\bDATABASE_URL\b/.test(error.message),
    );
  });

  test('WORKERS must be a whole number from 1', () => {
    for (const value of ['0', '-1', '1.5', 'two']) {
      assert.throws(() => loadConfig({ ...POSTGRES, WORKERS: value }), (error: unknown) => error instanceof ConfigError && /WORKERS/.test(error.message), value);
    }
  });

  test('CACHE_TTL_MS=0 turns the read cache off; a negative value is refused', () => {
    assert.equal(loadConfig({ CACHE_TTL_MS: '0' }).cacheTtlMs, 0);
    assert.throws(() => loadConfig({ CACHE_TTL_MS: '-5' }), (error: unknown) => error instanceof ConfigError && /CACHE_TTL_MS/.test(error.message));
  });
});
