import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load-config.ts';
import { BACKEND } from '../helpers/test-context.ts';

/** Asserts that `env` is refused with a ConfigError naming every variable in `names`. */
function assertRejected(env: Record<string, string>, names: readonly string[]): void {
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
      for (const name of names) assert.match(error.message, new RegExp(`\\b${name}\\b`), `names ${name}: ${error.message}`);
      return true;
    },
  );
}

describe(`loadConfig [${BACKEND}]`, () => {
  test('defaults: port 3000 on 127.0.0.1, base domain localhost, PGlite in ./data, limits 100/200 and 20, admin off', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.baseDomain, 'localhost');
    assert.equal(config.trustProxy, false);
    assert.deepEqual(config.storage, { kind: 'pglite', dataDir: './data' });
    assert.deepEqual(config.rateLimit, { perSecond: 100, burst: 200 });
    assert.equal(config.authFailureLimit, 20);
    assert.equal(config.adminToken, undefined);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.seedDemo, true);
  });

  test('reads only the variables it is given, not the process environment', () => {
    const saved = process.env.PORT;
    process.env.PORT = '4321';
    try {
      assert.equal(loadConfig({}).port, 3000);
      assert.equal(loadConfig({ PORT: '8080' }).port, 8080);
    } finally {
      if (saved === undefined) delete process.env.PORT;
      else process.env.PORT = saved;
    }
  });

  test('every variable is parsed into its field', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      BASE_DOMAIN: 'Users.Example.COM',
      TRUST_PROXY: 'true',
      DATA_DIR: '/var/lib/wum',
      ADMIN_TOKEN: 'a-long-enough-admin-token',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_BURST: '5',
      AUTH_FAILURE_LIMIT: '0',
      LOG_LEVEL: 'warn',
      SEED_DEMO: 'false',
    });
    assert.equal(config.port, 8080);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.baseDomain, 'users.example.com', 'lower-cased');
    assert.equal(config.trustProxy, true);
    assert.deepEqual(config.storage, { kind: 'pglite', dataDir: '/var/lib/wum' });
    assert.equal(config.adminToken, 'a-long-enough-admin-token');
    assert.deepEqual(config.rateLimit, { perSecond: 0, burst: 5 });
    assert.equal(config.authFailureLimit, 0);
    assert.equal(config.logLevel, 'warn');
    assert.equal(config.seedDemo, false);
  });

  test('DATABASE_URL selects PostgreSQL (postgres:// and postgresql://), with the pool size', () => {
    const url = 'postgres://wum:secret@db.internal:5432/wum';
    assert.deepEqual(loadConfig({ DATABASE_URL: url, DATA_DIR: '/ignored' }).storage, { kind: 'postgres', url, poolSize: 10 });
    assert.deepEqual(loadConfig({ DATABASE_URL: 'postgresql://db/wum', DATABASE_POOL_SIZE: '25' }).storage, {
      kind: 'postgres',
      url: 'postgresql://db/wum',
      poolSize: 25,
    });
  });

  test('empty strings count as unset', () => {
    const config = loadConfig({ PORT: '', HOST: '', DATABASE_URL: '', ADMIN_TOKEN: '', LOG_LEVEL: '', DATA_DIR: '' });
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.deepEqual(config.storage, { kind: 'pglite', dataDir: './data' });
    assert.equal(config.adminToken, undefined);
    assert.equal(config.logLevel, 'info');
  });

  test('invalid values throw a ConfigError naming the variable', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ PORT: 'abc' }, 'PORT'],
      [{ PORT: '70000' }, 'PORT'],
      [{ PORT: '-1' }, 'PORT'],
      [{ PORT: '80.5' }, 'PORT'],
      [{ RATE_LIMIT_PER_KEY: '-1' }, 'RATE_LIMIT_PER_KEY'],
      [{ RATE_LIMIT_BURST: 'lots' }, 'RATE_LIMIT_BURST'],
      [{ AUTH_FAILURE_LIMIT: '-5' }, 'AUTH_FAILURE_LIMIT'],
      [{ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE'],
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
      [{ BASE_DOMAIN: 'exa mple.com' }, 'BASE_DOMAIN'],
      [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
    ];
    for (const [env, name] of cases) assertRejected(env, [name]);
  });

  test('several invalid values are all named in one error', () => {
    assertRejected({ PORT: 'abc', RATE_LIMIT_PER_KEY: '-1', ADMIN_TOKEN: 'short', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' }, [
      'PORT',
      'RATE_LIMIT_PER_KEY',
      'ADMIN_TOKEN',
      'DATABASE_URL',
      'LOG_LEVEL',
    ]);
  });

  test('the error message does not echo the rejected ADMIN_TOKEN or DATABASE_URL', () => {
    for (const env of [{ ADMIN_TOKEN: 'sekrit-x' }, { DATABASE_URL: 'mysql://root:hunter2@db/x' }]) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && !/sekrit-x|hunter2/.test(error.message),
      );
    }
  });

  test('the result is frozen, nested objects included', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://db/wum' });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.storage));
    assert.ok(Object.isFrozen(config.rateLimit));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    }, TypeError);
  });
});
