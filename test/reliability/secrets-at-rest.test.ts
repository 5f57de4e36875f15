import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { sql } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../../src/config/load-config.ts';
import { createKeyRing, decryptSecret, encryptSecret, generateSecretsKey, secretsKeyId } from '../../src/core/secrets/secret-box.ts';
import { startService, type Service } from '../../src/server/service.ts';
import { SECRETS_KEY_FILE } from '../../src/server/secrets-key.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { createStore } from '../../src/storage/store.ts';
import { createDeliveryQueue } from '../../src/storage/deliveries.queries.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery-worker.ts';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { ADMIN_TOKEN, API, BACKEND, TEST_SECRETS_KEY, createTestContext, testConfig, testKeyRing, userBody, type TestContext } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { json } from '../helpers/json.ts';

/*
 * Secrets at rest (docs/security.md, "Secrets at rest"; docs/operations.md, "The secrets key"):
 * webhook signing secrets and identity provider client secrets are stored encrypted, read back
 * with SQL as an attacker with a dump would; rows stored in clear before are encrypted at start;
 * a rotation re-encrypts everything, after which the old key is not needed. On the real server
 * start (startService) of both backends: PostgreSQL with SECRETS_KEY, the embedded store with
 * the key it generates in its data directory.
 */

const ENCRYPTED = /^v1:[0-9a-f]{8}:[A-Za-z0-9+/]+=*$/;
const IDP_SECRET = 'the-client-secret-at-the-provider';

interface StoredSecrets {
  readonly secret: string;
  readonly previous_secret: string | null;
  readonly client_secret: string;
}

/** The stored secret columns of the one endpoint and the one identity provider, read with SQL. */
async function storedSecrets(service: Service): Promise<StoredSecrets> {
  const [row] = rowsOf<StoredSecrets>(
    await service.database.db.execute(sql`select e.secret, e.previous_secret, p.client_secret
      from webhook_endpoints e join workspace_identity_providers p on p.workspace_id = e.workspace_id`),
  );
  return row!;
}

describe(`secrets at rest, through server starts [${BACKEND}]`, () => {
  let database: PostgresDatabase | undefined;
  let dataDir: string | undefined;
  let service: Service | undefined;
  let receiver: WebhookReceiver;
  const subdomain = `sealed-${process.pid}`;
  const host = `${subdomain}.localhost`;
  let apiKey = '';
  let users = 0;

  /** Starts the server on this file's storage with `env` (an empty SECRETS_KEY: none, the embedded store's own key). */
  async function start(env: Record<string, string>): Promise<Service> {
    await service?.close();
    const base = { WEBHOOK_ALLOW_HTTP: 'true', RATE_LIMIT_PER_KEY: '0', WEBHOOK_POLL_INTERVAL_MS: '50', ...env };
    const config: Config = database ? testConfig({ ...base, DATABASE_URL: database.url, DATABASE_POOL_SIZE: '5' }) : testConfig({ ...base, DATA_DIR: dataDir! });
    service = await startService(config, { logger: false });
    return service;
  }
  const admin = (method: 'POST' | 'PUT', url: string, payload?: object) =>
    service!.app.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) });

  /** Adds a user and resolves with its delivery, verified with each of `secrets` (the standardwebhooks package). */
  async function deliveryVerifiedWith(...secrets: string[]): Promise<void> {
    users += 1;
    const before = receiver.received.length;
    const added = await service!.app.inject({ method: 'POST', url: `${API}/users`, headers: { host, 'x-api-key': apiKey }, payload: userBody(`sealed${users}@example.com`) });
    assert.equal(added.statusCode, 201, added.body);
    const [delivery] = (await receiver.waitFor(before + 1, 10_000)).slice(before);
    for (const secret of secrets) new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>);
  }

  /** The secrets key of the first starts: SECRETS_KEY on PostgreSQL; none on the embedded store (it makes its own). */
  const firstKey = () => (database ? { SECRETS_KEY: TEST_SECRETS_KEY } : { SECRETS_KEY: '' });
  /** The key the first starts encrypted with: on the embedded store, the content of its key file. */
  const firstKeyValue = () => (database ? TEST_SECRETS_KEY : readFileSync(join(dataDir!, SECRETS_KEY_FILE), 'utf8').trim());

  let endpoint: { id: string; secret: string };
  let previousSecret = '';
  const newKey = generateSecretsKey().toString('base64');

  /** A real provider: the operator API discovers it before saving (docs/security.md, "Outbound connections"). */
  let op: TestOpenIdProvider | undefined;

  before(async () => {
    receiver = await startWebhookReceiver();
    op = await startOpenIdProvider(['http://127.0.0.1/console/oidc/callback']);
    if (BACKEND === 'postgres') database = await createPostgresDatabase('wum_sealed', { migrated: true });
    else dataDir = join(mkdtempSync(join(tmpdir(), 'wum-sealed-')), 'data');
  });
  after(async () => {
    await service?.close();
    await receiver?.close();
    await op?.close();
    await database?.drop();
    if (dataDir) rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  test('create, rotate, identity provider: the stored columns hold only v1:<kid>:… ciphertexts, never the plaintext; deliveries still sign', async () => {
    await start(firstKey());
    assert.ok((await admin('PUT', '/products/crm', { roles: ['member'] })).statusCode < 300);
    const created = await admin('POST', '/workspaces', { subdomain });
    assert.equal(created.statusCode, 201, created.body);
    apiKey = json<'createWorkspace'>(created).api_key.key;
    const made = await admin('POST', `/workspaces/${subdomain}/webhook-endpoints`, { url: receiver.url });
    assert.equal(made.statusCode, 201, made.body);
    previousSecret = json<'createWebhookEndpoint'>(made).secret;
    const rotated = await admin('POST', `/workspaces/${subdomain}/webhook-endpoints/${json<'createWebhookEndpoint'>(made).id}/rotate-secret`);
    assert.equal(rotated.statusCode, 200, rotated.body);
    endpoint = { id: json<'createWebhookEndpoint'>(made).id, secret: json<'createWebhookEndpoint'>(rotated).secret };
    const idp = await admin('PUT', `/workspaces/${subdomain}/identity-provider`, { issuer: op!.issuer, client_id: op!.clientId, client_secret: IDP_SECRET });
    assert.equal(idp.statusCode, 201, idp.body);

    const stored = await storedSecrets(service!);
    for (const [value, plaintext] of [[stored.secret, endpoint.secret], [stored.previous_secret!, previousSecret], [stored.client_secret, IDP_SECRET]] as const) {
      assert.match(value, ENCRYPTED);
      assert.ok(!value.includes(plaintext) && !value.includes(plaintext.slice(6, 30)), 'no plaintext in the column');
    }
    assert.ok(stored.secret.startsWith(`v1:${secretsKeyId(Buffer.from(firstKeyValue(), 'base64'))}:`), 'encrypted with this server\'s key');
    assert.equal(service!.store.openSecret(stored.client_secret), IDP_SECRET);
    await deliveryVerifiedWith(endpoint.secret, previousSecret);
  });

  test('the embedded store generates its key in its data directory, mode 0600; PostgreSQL takes SECRETS_KEY and writes no file', () => {
    if (dataDir) {
      const stat = statSync(join(dataDir, SECRETS_KEY_FILE));
      assert.equal(stat.mode & 0o777, 0o600);
      assert.equal(Buffer.from(firstKeyValue(), 'base64').length, 32);
    } else {
      assert.equal(firstKeyValue(), TEST_SECRETS_KEY);
    }
  });

  test('a plaintext row written with SQL is encrypted at the next start, and still signs (and the client secret still decrypts)', async () => {
    const plainSecret = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
    await service!.database.db.execute(sql`update webhook_endpoints set secret = ${plainSecret}, previous_secret = null, previous_secret_expires_at = null`);
    await service!.database.db.execute(sql`update workspace_identity_providers set client_secret = ${IDP_SECRET}`);
    assert.equal((await storedSecrets(service!)).secret, plainSecret, 'in clear, as a row stored before encryption');
    await start(firstKey());
    const stored = await storedSecrets(service!);
    assert.match(stored.secret, ENCRYPTED);
    assert.match(stored.client_secret, ENCRYPTED);
    assert.equal(stored.previous_secret, null);
    assert.equal(service!.store.openSecret(stored.client_secret), IDP_SECRET);
    endpoint = { ...endpoint, secret: plainSecret };
    await deliveryVerifiedWith(plainSecret);
  });

  test('rotation: new key in SECRETS_KEY, old in SECRETS_KEY_PREVIOUS; rotate-secrets-key re-encrypts every row once, then the old key is not needed', async () => {
    const oldKey = firstKeyValue();
    await start({ SECRETS_KEY: newKey, SECRETS_KEY_PREVIOUS: oldKey });
    await deliveryVerifiedWith(endpoint.secret);
    const rotation = await admin('POST', '/secrets-key/rotate');
    assert.equal(rotation.statusCode, 200, rotation.body);
    const newId = secretsKeyId(Buffer.from(newKey, 'base64'));
    assert.deepEqual(rotation.json(), { key_id: newId, reencrypted: 2, undecryptable: 0 });
    const again = await admin('POST', '/secrets-key/rotate');
    assert.deepEqual(again.json(), { key_id: newId, reencrypted: 0, undecryptable: 0 }, 'idempotent');

    const stored = await storedSecrets(service!);
    const newOnly = createKeyRing(Buffer.from(newKey, 'base64'));
    assert.equal(decryptSecret(newOnly, stored.secret), endpoint.secret);
    assert.equal(decryptSecret(newOnly, stored.client_secret), IDP_SECRET);

    // The old key gone everywhere (on the embedded store, its file too): everything still works.
    if (dataDir) unlinkSync(join(dataDir, SECRETS_KEY_FILE));
    await start({ SECRETS_KEY: newKey });
    await deliveryVerifiedWith(endpoint.secret);
    assert.equal(service!.store.openSecret((await storedSecrets(service!)).client_secret), IDP_SECRET);
  });
});

describe(`secrets at rest, passes over the stored rows [${BACKEND}]`, () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
  });
  after(async () => ctx?.close());

  test('two start-up passes at once (two replicas) encrypt each plaintext row once; a value no key decrypts is counted and left', async () => {
    const ws = await ctx.createWorkspace('sealed-pass');
    for (let i = 0; i < 3; i += 1) {
      const made = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: `http://127.0.0.1:9/hook${i}` });
      assert.equal(made.statusCode, 201, made.body);
    }
    const where = sql`workspace_id = (select id from workspaces where subdomain = ${ws.subdomain})`;
    await ctx.database.db.execute(sql`update webhook_endpoints set secret = 'whsec_plain_' || id::text where ${where}`);
    const other = ctx.store;
    const replica = createStore(ctx.database.db, { keyRing: testKeyRing() });
    const [a, b] = await Promise.all([other.reencryptSecrets('plaintext'), replica.reencryptSecrets('plaintext')]);
    assert.equal(a.reencrypted + b.reencrypted, 3);
    const rows = rowsOf<{ id: string; secret: string }>(await ctx.database.db.execute(sql`select id, secret from webhook_endpoints where ${where}`));
    for (const row of rows) assert.equal(ctx.store.openSecret(row.secret), `whsec_plain_${row.id}`);

    const foreign = encryptSecret(createKeyRing(generateSecretsKey()), 'whsec_unknown');
    await ctx.database.db.execute(sql`update webhook_endpoints set secret = ${foreign} where ${where} and id = ${rows[0]!.id}::uuid`);
    const rotation = await ctx.admin('POST', '/secrets-key/rotate');
    assert.equal(rotation.statusCode, 200, rotation.body);
    assert.equal(json<'rotateSecretsKey'>(rotation).undecryptable, 1);
    const [kept] = rowsOf<{ secret: string }>(await ctx.database.db.execute(sql`select secret from webhook_endpoints where id = ${rows[0]!.id}::uuid`));
    assert.equal(kept!.secret, foreign, 'left as it was');
    assert.throws(() => ctx.store.openSecret(foreign), { code: 'secrets_key_unknown' });
  });

  test('a signing secret this server cannot decrypt sends nothing: the attempt fails with the reason, to be retried', async () => {
    await ctx.seedProducts();
    const ws = await ctx.createWorkspace('sealed-foreign');
    const receiver = await startWebhookReceiver();
    const worker = startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: ctx.config.webhooks, log: ctx.app.log, registry: new Registry() });
    try {
      const made = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: receiver.url });
      assert.equal(made.statusCode, 201, made.body);
      const foreign = encryptSecret(createKeyRing(generateSecretsKey()), json<'createWebhookEndpoint'>(made).secret);
      await ctx.database.db.execute(sql`update webhook_endpoints set secret = ${foreign} where id = ${json<'createWebhookEndpoint'>(made).id}::uuid`);
      assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('foreign@example.com') })).statusCode, 201);
      let attempt: { response_status: number | null; error: string | null } | undefined;
      for (let i = 0; i < 100 && !attempt; i += 1) {
        await sleep(50);
        const deliveries = await ctx.admin('GET', `/workspaces/${ws.subdomain}/webhook-endpoints/${json<'createWebhookEndpoint'>(made).id}/deliveries`);
        attempt = json<'listWebhookDeliveries'>(deliveries).deliveries[0]?.attempt_log?.[0];
      }
      assert.ok(attempt, 'the attempt was recorded');
      assert.equal(attempt.response_status, null);
      assert.match(attempt.error ?? '', /cannot be decrypted.*SECRETS_KEY/);
      assert.equal(receiver.received.length, 0, 'nothing sent');
    } finally {
      await worker.stop();
      await receiver.close();
    }
  });
});

describe(`secrets at rest, the encrypted form [${BACKEND}]`, () => {
  const ring = createKeyRing(generateSecretsKey());

  test('a fresh nonce each time; an altered value, another key\'s id or a plaintext never decrypts', () => {
    const first = encryptSecret(ring, 'whsec_same');
    const second = encryptSecret(ring, 'whsec_same');
    assert.notEqual(first, second, 'a new random nonce per value');
    assert.equal(decryptSecret(ring, first), 'whsec_same');

    const [version, kid, body] = first.split(':') as [string, string, string];
    const bytes = Buffer.from(body, 'base64');
    bytes[bytes.length - 20]! ^= 1;
    assert.throws(() => decryptSecret(ring, `${version}:${kid}:${bytes.toString('base64')}`), { code: 'secret_corrupt' });
    // The same ciphertext under another key id of the ring: the id is authenticated with it.
    const other = generateSecretsKey();
    const both = createKeyRing(ring.current.key, [other]);
    assert.throws(() => decryptSecret(both, `${version}:${secretsKeyId(other)}:${body}`), { code: 'secret_corrupt' });
    assert.throws(() => decryptSecret(createKeyRing(other), first), { code: 'secrets_key_unknown' });
    assert.throws(() => decryptSecret(ring, 'whsec_plain'), { code: 'secret_not_encrypted' });
  });
});
