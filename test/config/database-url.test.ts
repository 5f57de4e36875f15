// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'pg-connection-string';
import { DatabaseUrlError, parseDatabaseUrl } from '../../src/config/database-url.ts';
import { ConfigError, loadConfig } from '../../src/config/load-config.ts';
import { TEST_SECRETS_KEY } from '../../harness/backend.ts';

/*
 * DATABASE_URL in libpq's multi-host form (docs/contract.md Part B, "A highly available database"):
 * what pg_autoctl show uri prints is accepted as it is, and anything wum cannot use is a
 * configuration error naming DATABASE_URL, never a failure at the first request.
 */

describe(`DATABASE_URL, one host or several`, () => {
  test('the URI pg_autoctl prints: every host with its port, read-write, the other parameters kept for each host', () => {
    const url = parseDatabaseUrl('postgres://wum:s%40cret@10.0.0.1:5432,10.0.0.2:6432,db3/wum?target_session_attrs=read-write&sslmode=require');
    assert.deepEqual(url.hosts, [
      { host: '10.0.0.1', port: 5432 },
      { host: '10.0.0.2', port: 6432 },
      { host: 'db3', port: 5432 },
    ]);
    assert.equal(url.targetSessionAttrs, 'read-write');
    const second = parse(url.hostUrls[1]!);
    assert.equal(second.host, '10.0.0.2');
    assert.equal(second.port, '6432');
    assert.equal(second.user, 'wum');
    assert.equal(second.password, 's@cret');
    assert.equal(second.database, 'wum');
    assert.equal((second as { sslmode?: string }).sslmode, 'require');
    assert.doesNotMatch(url.hostUrls[1]!, /target_session_attrs/, 'node-postgres is not given what it does not know');
  });

  test('one host without target_session_attrs is the single-server form of before (mode any); IPv6 in brackets', () => {
    assert.deepEqual(parseDatabaseUrl('postgresql://u@db.internal/wum'), {
      hosts: [{ host: 'db.internal', port: 5432 }],
      targetSessionAttrs: 'any',
      hostUrls: ['postgresql://u@db.internal:5432/wum'],
    });
    const v6 = parseDatabaseUrl('postgres://u@[::1]:5433,[fd00::2]/wum?target_session_attrs=primary');
    assert.deepEqual(v6.hosts.map((h) => h.port), [5433, 5432]);
    assert.equal(parse(v6.hostUrls[0]!).host, '::1');
    assert.equal(v6.targetSessionAttrs, 'primary');
  });

  test('read-only targets, bad ports and other schemes are refused with a reason', () => {
    for (const [url, reason] of [
      ['postgres://h1,h2/wum?target_session_attrs=standby', /target_session_attrs=standby/],
      ['postgres://h1,h2/wum?target_session_attrs=prefer-standby', /read-write/],
      ['postgres://h1:99999/wum', /invalid port/],
      ['postgres://h1:5432:1/wum', /malformed host/],
      ['mysql://h1/wum', /postgres:\/\//],
    ] as const) {
      assert.throws(() => parseDatabaseUrl(url), (error: Error) => error instanceof DatabaseUrlError && reason.test(error.message), url);
    }
  });

  test('loadConfig: a multi-host URL is taken as it is; a bad one is a ConfigError naming DATABASE_URL, without the password', () => {
    const url = 'postgres://wum:hunter2@h1:5432,h2:5432/wum?target_session_attrs=read-write';
    const config = loadConfig({ DATABASE_URL: url, SECRETS_KEY: TEST_SECRETS_KEY });
    assert.equal(config.storage.kind, 'postgres');
    assert.equal(config.storage.kind === 'postgres' && config.storage.url, url);
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'postgres://wum:hunter2@h1,h2/wum?target_session_attrs=standby' }),
      (error: Error) => error instanceof ConfigError && /DATABASE_URL/.test(error.message) && !/hunter2/.test(error.message),
    );
  });

  test('DATABASE_QUERY_TIMEOUT_MS: one second over the statement timeout unless set; 0 turns it off', () => {
    const timeouts = (env: Record<string, string>) => {
      const storage = loadConfig({ DATABASE_URL: 'postgres://h/wum', SECRETS_KEY: TEST_SECRETS_KEY, ...env }).storage;
      return storage.kind === 'postgres' ? storage.queryTimeoutMs : undefined;
    };
    assert.equal(timeouts({}), 6000);
    assert.equal(timeouts({ DATABASE_STATEMENT_TIMEOUT_MS: '2000' }), 3000);
    assert.equal(timeouts({ DATABASE_STATEMENT_TIMEOUT_MS: '0' }), 0);
    assert.equal(timeouts({ DATABASE_QUERY_TIMEOUT_MS: '2500' }), 2500);
    assert.throws(() => loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '-1' }), /DATABASE_QUERY_TIMEOUT_MS/);
  });
});
