// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import { ConfigError, loadConfig } from '../../src/config/load-config.ts';
import { TEST_SECRETS_KEY } from '../../harness/backend.ts';

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

describe(`loadConfig`, () => {
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
    assert.deepEqual(loadConfig({ DATABASE_URL: url, SECRETS_KEY: TEST_SECRETS_KEY, DATA_DIR: '/ignored' }).storage, {
      kind: 'postgres',
      url,
      poolSize: 10,
      statementTimeoutMs: 5000,
      connectTimeoutMs: 5000,
      queryTimeoutMs: 6000,
    });
    assert.deepEqual(
      loadConfig({
        DATABASE_URL: 'postgresql://db/wum',
        SECRETS_KEY: TEST_SECRETS_KEY,
        DATABASE_POOL_SIZE: '25',
        DATABASE_STATEMENT_TIMEOUT_MS: '0',
        DATABASE_CONNECT_TIMEOUT_MS: '250',
      }).storage,
      { kind: 'postgres', url: 'postgresql://db/wum', poolSize: 25, statementTimeoutMs: 0, connectTimeoutMs: 250, queryTimeoutMs: 0 },
    );
  });

  test('REDIS_URL shares the rate limits (redis:// and rediss://), with its timeout; unset: none', () => {
    assert.equal(loadConfig({}).redis, undefined);
    assert.deepEqual(loadConfig({ REDIS_URL: 'redis://cache.internal:6379/0' }).redis, {
      url: 'redis://cache.internal:6379/0',
      timeoutMs: 250,
    });
    assert.deepEqual(loadConfig({ REDIS_URL: 'rediss://:pw@cache.internal', REDIS_TIMEOUT_MS: '50' }).redis, {
      url: 'rediss://:pw@cache.internal',
      timeoutMs: 50,
    });
    assert.equal(loadConfig({ REDIS_TIMEOUT_MS: '50' }).redis, undefined, 'a timeout alone changes nothing');
    assertRejected({ REDIS_URL: 'http://cache.internal' }, ['REDIS_URL']);
    assertRejected({ REDIS_URL: 'redis://x', REDIS_TIMEOUT_MS: '5' }, ['REDIS_TIMEOUT_MS']);
  });

  test('resource bounds: safe defaults for timeouts, sizes and load shedding', () => {
    const config = loadConfig({});
    assert.deepEqual(config.http, {
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      connectionTimeoutMs: 60_000,
      keepAliveTimeoutMs: 60_000,
      idleTimeoutMs: 30_000,
      maxConnections: 10_000,
      maxHeaderBytes: 16_384,
      maxUrlLength: 4096,
      shutdownTimeoutMs: 10_000,
    });
    const heapLimit = getHeapStatistics().heap_size_limit;
    assert.equal(config.loadShedding.maxEventLoopDelayMs, 1000);
    assert.equal(config.loadShedding.maxEventLoopUtilization, 0, 'off');
    assert.equal(config.loadShedding.maxRssBytes, 0, 'off');
    assert.equal(config.loadShedding.maxHeapUsedBytes, Math.floor(heapLimit * 0.9), '90 % of the heap limit');
    assert.equal(config.loadShedding.retryAfterSeconds, 10);
    assert.equal(config.loadShedding.sampleIntervalMs, 5000);
  });

  test('resource bounds: every variable is parsed; sizes in MiB become bytes; 0 turns a check off', () => {
    const config = loadConfig({
      REQUEST_TIMEOUT_MS: '5000',
      HEADERS_TIMEOUT_MS: '2000',
      CONNECTION_TIMEOUT_MS: '0',
      KEEP_ALIVE_TIMEOUT_MS: '5000',
      IDLE_TIMEOUT_MS: '2000',
      MAX_CONNECTIONS: '50',
      MAX_HEADER_BYTES: '8192',
      MAX_URL_LENGTH: '2048',
      SHUTDOWN_TIMEOUT_MS: '3000',
      SHED_EVENT_LOOP_DELAY_MS: '0',
      SHED_EVENT_LOOP_UTILIZATION: '0.95',
      SHED_HEAP_USED_MB: '0',
      SHED_RSS_MB: '1024',
      SHED_RETRY_AFTER_SECONDS: '5',
      SHED_SAMPLE_INTERVAL_MS: '250',
    });
    assert.deepEqual(config.http, {
      requestTimeoutMs: 5000,
      headersTimeoutMs: 2000,
      connectionTimeoutMs: 0,
      keepAliveTimeoutMs: 5000,
      idleTimeoutMs: 2000,
      maxConnections: 50,
      maxHeaderBytes: 8192,
      maxUrlLength: 2048,
      shutdownTimeoutMs: 3000,
    });
    assert.deepEqual(config.loadShedding, {
      maxEventLoopDelayMs: 0,
      maxEventLoopUtilization: 0.95,
      maxHeapUsedBytes: 0,
      maxRssBytes: 1024 * 1024 * 1024,
      retryAfterSeconds: 5,
      sampleIntervalMs: 250,
    });
    assert.ok(Object.isFrozen(config.http) && Object.isFrozen(config.loadShedding));
  });

  test('resource bounds: invalid values and a header timeout above the request timeout are refused', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ REQUEST_TIMEOUT_MS: '-1' }, 'REQUEST_TIMEOUT_MS'],
      [{ HEADERS_TIMEOUT_MS: 'soon' }, 'HEADERS_TIMEOUT_MS'],
      [{ KEEP_ALIVE_TIMEOUT_MS: '0' }, 'KEEP_ALIVE_TIMEOUT_MS'],
      [{ MAX_HEADER_BYTES: '100' }, 'MAX_HEADER_BYTES'],
      [{ MAX_URL_LENGTH: '10' }, 'MAX_URL_LENGTH'],
      [{ DATABASE_STATEMENT_TIMEOUT_MS: '1.5' }, 'DATABASE_STATEMENT_TIMEOUT_MS'],
      [{ DATABASE_CONNECT_TIMEOUT_MS: '-1' }, 'DATABASE_CONNECT_TIMEOUT_MS'],
      [{ SHED_EVENT_LOOP_UTILIZATION: '1.5' }, 'SHED_EVENT_LOOP_UTILIZATION'],
      [{ SHED_HEAP_USED_MB: '-1' }, 'SHED_HEAP_USED_MB'],
      [{ SHED_RETRY_AFTER_SECONDS: '0' }, 'SHED_RETRY_AFTER_SECONDS'],
      [{ SHED_SAMPLE_INTERVAL_MS: '10' }, 'SHED_SAMPLE_INTERVAL_MS'],
      [{ REQUEST_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '2000' }, 'HEADERS_TIMEOUT_MS'],
    ];
    for (const [env, name] of cases) assertRejected(env, [name]);
    assert.equal(loadConfig({ REQUEST_TIMEOUT_MS: '0', HEADERS_TIMEOUT_MS: '2000' }).http.headersTimeoutMs, 2000);
  });

  test('webhooks: the SPEC retry schedule, 15 s, https only by default; every variable parsed; bad ones refused', () => {
    const defaults = loadConfig({}).webhooks;
    assert.deepEqual(defaults.retryScheduleMs, [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    assert.equal(defaults.timeoutMs, 15_000);
    assert.equal(defaults.allowHttp, false);
    assert.deepEqual(defaults.allowedNetworks, []);
    assert.equal(defaults.worker, true);
    const set = loadConfig({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWED_NETWORKS: '10.20.0.0/16, fd12:3456::/48',
      WEBHOOK_RETRY_SCHEDULE: '250ms,2s,1m,1h',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_CONCURRENCY_PER_ENDPOINT: '3',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_WORKER: 'false',
      WEBHOOK_LOOPBACK_ONLY: 'true',
      EVENTS_PRUNE_INTERVAL_MS: '60000',
    }).webhooks;
    assert.deepEqual(set, {
      allowHttp: true,
      allowedNetworks: ['10.20.0.0/16', 'fd12:3456::/48'],
      loopbackOnly: true,
      retryScheduleMs: [250, 2_000, 60_000, 3_600_000],
      timeoutMs: 2000,
      concurrencyPerEndpoint: 3,
      pollIntervalMs: 50,
      worker: false,
      pruneIntervalMs: 60_000,
    });
    assertRejected({ WEBHOOK_RETRY_SCHEDULE: '5s,soon' }, ['WEBHOOK_RETRY_SCHEDULE']);
    assertRejected({ WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/33' }, ['WEBHOOK_ALLOWED_NETWORKS']);
    assertRejected({ WEBHOOK_TIMEOUT_MS: '99' }, ['WEBHOOK_TIMEOUT_MS']);
  });

  test('outbound policy: OUTBOUND_ALLOWED_NETWORKS for every outbound connection, WEBHOOK_ALLOWED_NETWORKS its older name, never both', () => {
    const defaults = loadConfig({}).outbound;
    assert.deepEqual(defaults, { allowHttp: false, allowedNetworks: [], loopbackOnly: false });
    const set = loadConfig({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32, 10.20.0.0/16', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_LOOPBACK_ONLY: 'true' });
    assert.deepEqual(set.outbound, { allowHttp: true, allowedNetworks: ['127.0.0.1/32', '10.20.0.0/16'], loopbackOnly: true });
    assert.deepEqual(set.webhooks.allowedNetworks, ['127.0.0.1/32', '10.20.0.0/16'], 'webhooks follow the one setting');
    const alias = loadConfig({ WEBHOOK_ALLOWED_NETWORKS: 'fd12:3456::/48' });
    assert.deepEqual(alias.outbound.allowedNetworks, ['fd12:3456::/48'], 'the older name sets the same policy');
    assert.deepEqual(alias.webhooks.allowedNetworks, ['fd12:3456::/48']);
    assertRejected({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' }, ['OUTBOUND_ALLOWED_NETWORKS', 'WEBHOOK_ALLOWED_NETWORKS']);
    assertRejected({ OUTBOUND_ALLOWED_NETWORKS: '10.0.0.0/33' }, ['OUTBOUND_ALLOWED_NETWORKS']);
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

  test('the error message does not echo the rejected ADMIN_TOKEN, DATABASE_URL or REDIS_URL', () => {
    for (const env of [{ ADMIN_TOKEN: 'sekrit-x' }, { DATABASE_URL: 'mysql://root:hunter2@db/x' }, { REDIS_URL: 'tcp://:hunter2@cache' }]) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && !/sekrit-x|hunter2/.test(error.message),
      );
    }
  });

  test('the result is frozen, nested objects included', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://db/wum', SECRETS_KEY: TEST_SECRETS_KEY });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.storage));
    assert.ok(Object.isFrozen(config.rateLimit));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    }, TypeError);
  });

  test('console sessions: 8 h idle, 7 days at most, key sign-in auto by default; overrides; bad values refused', () => {
    assert.deepEqual(loadConfig({}).sessions, { idleMs: 8 * 3_600_000, maxMs: 7 * 86_400_000, keySignIn: 'auto', maxPerPrincipal: 10 });
    assert.deepEqual(loadConfig({ SESSION_IDLE_MINUTES: '30', SESSION_MAX_HOURS: '12', CONSOLE_KEY_SIGN_IN: 'never' }).sessions, {
      idleMs: 30 * 60_000,
      maxMs: 12 * 3_600_000,
      keySignIn: 'never',
      maxPerPrincipal: 10,
    });
    assertRejected({ SESSION_IDLE_MINUTES: '0', SESSION_MAX_HOURS: '-1', CONSOLE_KEY_SIGN_IN: 'maybe' }, [
      'SESSION_IDLE_MINUTES',
      'SESSION_MAX_HOURS',
      'CONSOLE_KEY_SIGN_IN',
    ]);
  });

  test('POLICY_MIN_DURATION: P1D by default; seconds accepted; no duration, a zero or a month refused', () => {
    assert.deepEqual(loadConfig({}).policies, { minDuration: { text: 'P1D', seconds: 86_400 } });
    assert.deepEqual(loadConfig({ POLICY_MIN_DURATION: 'PT2S' }).policies, { minDuration: { text: 'PT2S', seconds: 2 } });
    for (const bad of ['90 days', 'PT0S', 'P1M']) {
      assert.throws(() => loadConfig({ POLICY_MIN_DURATION: bad }), /POLICY_MIN_DURATION/);
    }
  });

  test('operator sign-in: off by default; all three OIDC settings with OPERATOR_EMAILS (trimmed, lower-cased); a partial set is refused naming what is missing', () => {
    assert.equal(loadConfig({}).operatorSignIn, undefined);
    const full = {
      OPERATOR_OIDC_ISSUER: 'https://login.example.com',
      OPERATOR_OIDC_CLIENT_ID: 'wum',
      OPERATOR_OIDC_CLIENT_SECRET: 'a-secret',
      OPERATOR_EMAILS: ' Ada@Example.com,, grace@example.com ',
    };
    const config = loadConfig(full).operatorSignIn;
    assert.equal(config?.issuer, 'https://login.example.com');
    assert.equal(config?.clientId, 'wum');
    assert.deepEqual([...config!.emails], ['ada@example.com', 'grace@example.com']);
    assert.equal(
      loadConfig({ ...full, OPERATOR_OIDC_ISSUER: 'http://127.0.0.1:9000', WEBHOOK_ALLOW_HTTP: 'true' }).operatorSignIn?.issuer,
      'http://127.0.0.1:9000',
      'http on loopback, where plain http is allowed',
    );
    assertRejected({ ...full, OPERATOR_OIDC_ISSUER: 'http://127.0.0.1:9000' }, ['OPERATOR_OIDC_ISSUER', 'WEBHOOK_ALLOW_HTTP']);

    assertRejected({ OPERATOR_OIDC_ISSUER: 'https://login.example.com', OPERATOR_EMAILS: 'a@example.com' }, ['OPERATOR_OIDC_CLIENT_ID', 'OPERATOR_OIDC_CLIENT_SECRET']);
    assertRejected({ OPERATOR_OIDC_CLIENT_SECRET: 's' }, ['OPERATOR_OIDC_ISSUER', 'OPERATOR_OIDC_CLIENT_ID']);
    assertRejected({ ...full, OPERATOR_EMAILS: ' , ' }, ['OPERATOR_EMAILS']);
    const { OPERATOR_EMAILS: _omitted, ...noEmails } = full;
    assertRejected(noEmails, ['OPERATOR_EMAILS']);
    assertRejected({ OPERATOR_EMAILS: 'a@example.com' }, ['OPERATOR_EMAILS', 'OPERATOR_OIDC_ISSUER']);
    assertRejected({ ...full, OPERATOR_OIDC_ISSUER: 'http://login.example.com' }, ['OPERATOR_OIDC_ISSUER']);
    assertRejected({ ...full, OPERATOR_OIDC_ISSUER: 'ftp://login.example.com' }, ['OPERATOR_OIDC_ISSUER']);
  });

  test('OPERATOR_EMAILS: only ASCII addresses (a Kelvin sign, U+0130 or a fullwidth letter is refused naming it); ASCII letters are folded', () => {
    const full = { OPERATOR_OIDC_ISSUER: 'https://login.example.com', OPERATOR_OIDC_CLIENT_ID: 'wum', OPERATOR_OIDC_CLIENT_SECRET: 'a-secret' };
    for (const email of ['\u212Aate@example.com', '\u0130ris@example.com', '\uFF2BATE@example.com']) {
      assertRejected({ ...full, OPERATOR_EMAILS: `ada@example.com, ${email}` }, ['OPERATOR_EMAILS']);
      assert.throws(() => loadConfig({ ...full, OPERATOR_EMAILS: email }), (error: Error) => error.message.includes(email));
    }
    assert.deepEqual([...loadConfig({ ...full, OPERATOR_EMAILS: 'KATE@Example.COM' }).operatorSignIn!.emails], ['kate@example.com']);
  });

  test('bounds: METRICS_TOKEN, sign-in start limits, sessions per principal and AUDIT_RETENTION, with their defaults', () => {
    const defaults = loadConfig({});
    assert.equal(defaults.bounds.metricsToken, undefined);
    assert.equal(defaults.bounds.signInStartsPerAddress, 60);
    assert.equal(defaults.bounds.signInStartsPerWorkspace, 600);
    assert.equal(defaults.sessions.maxPerPrincipal, 10);
    assert.deepEqual(defaults.bounds.auditRetention, { years: 0, months: 0, weeks: 0, days: 365, hours: 0, minutes: 0, seconds: 0 });
    const set = loadConfig({
      METRICS_TOKEN: 'a-metrics-token-of-some-length',
      SIGN_IN_START_LIMIT: '0',
      SIGN_IN_START_LIMIT_PER_WORKSPACE: '5',
      SESSIONS_PER_PRINCIPAL_MAX: '0',
      AUDIT_RETENTION: 'P1Y6MT12H',
    });
    assert.equal(set.bounds.metricsToken, 'a-metrics-token-of-some-length');
    assert.equal(set.bounds.signInStartsPerAddress, 0);
    assert.equal(set.bounds.signInStartsPerWorkspace, 5);
    assert.equal(set.sessions.maxPerPrincipal, 0);
    assert.deepEqual(set.bounds.auditRetention, { years: 1, months: 6, weeks: 0, days: 0, hours: 12, minutes: 0, seconds: 0 });
    for (const retention of ['365', '365d', 'P', 'P0D', '-P1D', 'P1.5D', 'one year']) assertRejected({ AUDIT_RETENTION: retention }, ['AUDIT_RETENTION']);
    assertRejected({ METRICS_TOKEN: 'short' }, ['METRICS_TOKEN']);
    assertRejected({ SIGN_IN_START_LIMIT: '-1', SIGN_IN_START_LIMIT_PER_WORKSPACE: 'many', SESSIONS_PER_PRINCIPAL_MAX: '1.5' }, [
      'SIGN_IN_START_LIMIT',
      'SIGN_IN_START_LIMIT_PER_WORKSPACE',
      'SESSIONS_PER_PRINCIPAL_MAX',
    ]);
  });

  test('AUDIT_STREAM_PAUSE_AFTER: an ISO 8601 duration of fixed length, default PT24H', () => {
    assert.equal(loadConfig({}).auditStreams.pauseAfterMs, 24 * 3_600_000);
    assert.equal(loadConfig({ AUDIT_STREAM_PAUSE_AFTER: 'PT3S' }).auditStreams.pauseAfterMs, 3000);
    assert.equal(loadConfig({ AUDIT_STREAM_PAUSE_AFTER: 'P7D' }).auditStreams.pauseAfterMs, 7 * 86_400_000);
    for (const value of ['24h', 'P', 'PT0S', '-PT1H', 'P1M', 'P1Y']) assertRejected({ AUDIT_STREAM_PAUSE_AFTER: value }, ['AUDIT_STREAM_PAUSE_AFTER']);
  });

  test('SECRETS_KEY: required with DATABASE_URL (the error names it and says every replica needs the same key); 32 bytes in base64; optional with the embedded store', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'postgres://db/wum' }),
      (error: unknown) =>
        error instanceof ConfigError && /\bSECRETS_KEY\b/.test(error.message) && /every replica/.test(error.message) && /DATABASE_URL/.test(error.message),
    );
    const config = loadConfig({ DATABASE_URL: 'postgres://db/wum', SECRETS_KEY: TEST_SECRETS_KEY });
    assert.equal(config.secrets.key?.toString('base64'), TEST_SECRETS_KEY);
    assert.equal(config.secrets.previousKey, undefined);
    assert.deepEqual(loadConfig({}).secrets, { key: undefined, previousKey: undefined }, 'the embedded store keeps its own key');
    const previous = Buffer.alloc(32, 9).toString('base64');
    assert.equal(loadConfig({ SECRETS_KEY: TEST_SECRETS_KEY, SECRETS_KEY_PREVIOUS: previous }).secrets.previousKey?.toString('base64'), previous);

    const tooShort = Buffer.alloc(16, 1).toString('base64');
    for (const bad of [tooShort, 'not base64!', `${TEST_SECRETS_KEY}AAAA`]) {
      assertRejected({ SECRETS_KEY: bad }, ['SECRETS_KEY']);
      assert.throws(() => loadConfig({ SECRETS_KEY: bad }), (error: Error) => !error.message.includes(bad), 'the value is not echoed');
    }
    assertRejected({ SECRETS_KEY: TEST_SECRETS_KEY, SECRETS_KEY_PREVIOUS: tooShort }, ['SECRETS_KEY_PREVIOUS']);
    assertRejected({ SECRETS_KEY_PREVIOUS: previous }, ['SECRETS_KEY_PREVIOUS', 'SECRETS_KEY']);
  });
});
