// one backend: postgres: the SDK against a server process, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAdminClient, createClient, WumApiError, type RetryEvent, type WumAdminClient, type WumClient } from 'wum/sdk';
import { BACKEND } from '../helpers/test-context.ts';
import { startWumServer, type WumServer } from '../../harness/wum-server.ts';

const TIMEOUT = { timeout: 120_000 };

/** Rejects unless `promise` fails with a WumApiError; resolves with it. */
async function apiError(promise: Promise<unknown>): Promise<WumApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof WumApiError, `expected a WumApiError, got ${String(error)}`);
  return error;
}

describe(`SDK against a server process [${BACKEND}]`, () => {
  let server: WumServer;
  let admin: WumAdminClient;
  let wum: WumClient;
  let subdomain: string;
  let keyId: string;

  before(async () => {
    server = await startWumServer({ RATE_LIMIT_PER_KEY: '0' });
    admin = createAdminClient({ baseUrl: server.adminUrl, adminToken: server.adminToken });
  }, TIMEOUT);
  after(async () => {
    await admin?.close();
    await wum?.close();
    await server?.stop();
  });

  test('admin client: catalogue, workspace with its first key, keys, audit trail', TIMEOUT, async () => {
    assert.deepEqual((await admin.products.put('crm', ['admin', 'member'])).created, true);
    const replaced = await admin.products.put('crm', ['admin', 'member', 'viewer']);
    assert.equal(replaced.created, false);
    assert.deepEqual(replaced.product.roles, ['admin', 'member', 'viewer']);
    await admin.products.put('analytics', ['editor', 'viewer']);
    assert.deepEqual((await admin.products.list()).map((p) => p.name), ['analytics', 'crm']);
    assert.deepEqual((await admin.products.get('crm')).roles, ['admin', 'member', 'viewer']);

    const created = await admin.workspaces.create({ subdomain: 'Acme', name: 'Acme Inc' });
    subdomain = created.subdomain;
    assert.equal(subdomain, 'acme');
    assert.match(created.api_key.key, /^wum_/);
    keyId = created.api_key.id;
    assert.equal((await admin.workspaces.get('acme')).name, 'Acme Inc');
    const page = await admin.workspaces.list({ page_size: 10 });
    assert.deepEqual(page.workspaces.map((w) => w.subdomain), ['acme']);
    const exists = await apiError(admin.workspaces.create({ subdomain: 'acme' }));
    assert.equal(exists.code, 'workspace_exists');
    assert.equal(exists.status, 409);

    wum = createClient({ baseUrl: server.workspaceUrl(subdomain), apiKey: created.api_key.key });
    const second = await admin.apiKeys.create('acme');
    assert.deepEqual((await admin.apiKeys.list('acme')).map((k) => k.id), [keyId, second.id]);
    await admin.apiKeys.revoke('acme', second.id);
    await admin.apiKeys.revoke('acme', second.id);
    const revoked = createClient({ baseUrl: server.workspaceUrl(subdomain), apiKey: second.key });
    assert.equal((await apiError(revoked.products.list())).code, 'invalid_api_key');
    await revoked.close();
    const events = await admin.auditEvents.list('acme');
    assert.ok(events.audit_events.some((e) => e.action === 'api_key.revoked'));
    assert.ok((await admin.auditEvents.list()).total_count! >= events.total_count!);
  });

  test('http://<workspace>.localhost:<port> reaches the workspace (no Host override): products and users', TIMEOUT, async () => {
    assert.deepEqual(await wum.products.list(), [
      { name: 'analytics', roles: ['editor', 'viewer'] },
      { name: 'crm', roles: ['admin', 'member', 'viewer'] },
    ]);
    const ada = await wum.users.add({ email: 'ada@example.com', role: 'owner', first_name: 'Ada', apps: [{ name: 'crm', role: 'admin' }] });
    assert.equal(ada.status, 'active');
    assert.equal(ada.last_name, '-');
    assert.equal(ada.updated_at, ada.created_at, 'a fresh add has equal timestamps');
    const grace = await wum.users.add({ email: 'grace@example.com', role: 'non_owner', apps: [] });
    assert.deepEqual(await wum.users.get('GRACE@example.com'), grace);

    await wum.users.remove('grace@example.com');
    await wum.users.remove('grace@example.com');
    assert.equal((await wum.users.get('grace@example.com')).status, 'deactivated');
    const back = await wum.users.add({ email: 'grace@example.com', role: 'non_owner', apps: [{ name: 'analytics', role: 'viewer' }] });
    assert.equal(back.status, 'active');
    assert.ok(back.updated_at > back.created_at, 'a reactivation has updated_at after created_at');

    const listing = await wum.users.list({ status: 'all', page_size: 1, page_number: 2 });
    assert.deepEqual(listing.users.map((u) => u.email), ['grace@example.com']);
    assert.deepEqual(listing.pagination, { total_records: 2, current_page_number: 2, total_pages: 2, page_size: 1 });
    assert.equal(listing.total_count, 2);
  });

  test('users.iterate walks every page and ends on the empty page', TIMEOUT, async () => {
    const emails = Array.from({ length: 23 }, (_, i) => `it-${String(i).padStart(2, '0')}@example.com`);
    for (const email of emails) await wum.users.add({ email, role: 'non_owner', apps: [] });
    await wum.users.remove('it-05@example.com');
    const seen: string[] = [];
    for await (const user of wum.users.iterate({ page_size: 5 })) seen.push(user.email);
    assert.deepEqual(seen, ['ada@example.com', 'grace@example.com', ...emails.filter((e) => e !== 'it-05@example.com')]);
    const all: string[] = [];
    for await (const user of wum.users.iterate({ status: 'all', page_size: 100 })) all.push(user.email);
    assert.equal(all.length, 25);
    const deactivated: string[] = [];
    for await (const user of wum.users.iterate({ status: 'deactivated', page_size: 7 })) deactivated.push(user.email);
    assert.deepEqual(deactivated, ['it-05@example.com']);
  });

  test('users.update with ifMatch, users.history, and list/iterate filters', TIMEOUT, async () => {
    await wum.users.add({ email: 'upd@example.com', role: 'non_owner', apps: [], first_name: 'Upton' });
    const read = await wum.users.get('upd@example.com');
    assert.equal(read.etag, '"1"');
    const changed = await wum.users.update('upd@example.com', { last_name: 'Sinclair', apps: [{ name: 'crm', role: 'admin' }] }, { ifMatch: read.etag });
    assert.equal(changed.last_name, 'Sinclair');
    assert.deepEqual(changed.apps, [{ name: 'crm', role: 'admin' }]);
    assert.equal(changed.first_name, 'Upton');
    assert.equal(changed.etag, '"2"');
    assert.equal(changed.id, read.id);
    const stale = await apiError(wum.users.update('upd@example.com', { first_name: 'Late' }, { ifMatch: read.etag }));
    assert.equal(stale.status, 412);
    assert.equal(stale.code, 'precondition_failed');
    assert.equal((await wum.users.get('upd@example.com')).first_name, 'Upton');

    const history = await wum.users.history('upd@example.com', { sort: '-occurred_at' });
    assert.deepEqual(history.audit_events.map((e) => e.action), ['user.updated', 'user.created']);
    assert.equal(history.audit_events[0]!.user_id, read.id);

    const found = await wum.users.list({ q: 'UPT', app: 'crm:admin', role: 'non_owner' });
    assert.deepEqual(found.users.map((u) => u.email), ['upd@example.com']);
    assert.equal(found.total_count, 1);
    const seen: string[] = [];
    for await (const user of wum.users.iterate({ q: 'upd', sort: '-email', page_size: 1 })) seen.push(user.email);
    assert.deepEqual(seen, ['upd@example.com']);
    const bad = await apiError(wum.users.list({ sort: 'name' as never }));
    assert.equal(bad.code, 'invalid_parameter');
  });

  test('failures are WumApiError with the problem: status, code, detail, errors, requestId', TIMEOUT, async () => {
    const exists = await apiError(wum.users.add({ email: 'ADA@example.com', role: 'owner', apps: [] }));
    assert.equal(exists.status, 409);
    assert.equal(exists.code, 'user_already_exists');
    assert.equal(exists.title, 'User already exists');
    assert.equal(exists.type, 'urn:wum:problem:user_already_exists');
    assert.match(exists.detail, /already exists/);
    assert.match(exists.requestId ?? '', /^\S{8,}$/);
    assert.deepEqual(exists.errors, []);

    const role = await apiError(wum.users.add({ email: 'x@example.com', role: 'non_owner', apps: [{ name: 'crm', role: 'wizard' }] }));
    assert.equal(role.status, 422);
    assert.equal(role.code, 'unknown_product_role');
    assert.deepEqual(role.errors.map((e) => e.field), ['user.apps[0].role']);

    const invalid = await apiError(wum.users.add({ email: 'not-an-email', role: 'boss' as 'owner', apps: [] }));
    assert.equal(invalid.code, 'validation_failed');
    assert.deepEqual(invalid.errors.map((e) => e.field).sort(), ['user.email', 'user.role']);

    assert.equal((await apiError(wum.users.get('nobody@example.com'))).code, 'user_not_found');
    assert.equal((await apiError(wum.users.remove('ada@example.com'))).code, 'last_owner');
    assert.equal((await apiError(wum.users.list({ page_size: 1000 }))).code, 'invalid_parameter');

    const wrongKey = createClient({ baseUrl: server.workspaceUrl(subdomain), apiKey: 'wum_wrong' });
    assert.equal((await apiError(wrongKey.users.list())).code, 'invalid_api_key');
    const noWorkspace = createClient({ baseUrl: server.workspaceUrl('nope'), apiKey: 'wum_wrong' });
    assert.equal((await apiError(noWorkspace.users.list())).code, 'workspace_not_found');
    const badToken = createAdminClient({ baseUrl: server.adminUrl, adminToken: 'wrong-token-0123456789' });
    assert.equal((await apiError(badToken.workspaces.list())).status, 401);
    await Promise.all([wrongKey.close(), noWorkspace.close(), badToken.close()]);
  });

  test('a server with a tiny rate limit: concurrent adds wait out 429 (Retry-After) and all succeed', TIMEOUT, async () => {
    const limited = await startWumServer({ RATE_LIMIT_PER_KEY: '2', RATE_LIMIT_BURST: '2' });
    try {
      const limitedAdmin = createAdminClient({ baseUrl: limited.adminUrl, adminToken: limited.adminToken });
      const { api_key: key } = await limitedAdmin.workspaces.create({ subdomain: 'tiny' });
      const retries: RetryEvent[] = [];
      const client = createClient({
        baseUrl: limited.workspaceUrl('tiny'),
        apiKey: key.key,
        retry: { maxAttempts: 20, onRetry: (event) => void retries.push(event) },
      });
      const emails = Array.from({ length: 8 }, (_, i) => `t${i}@example.com`);
      const users = await Promise.all(emails.map((email) => client.users.add({ email, role: 'owner', apps: [] })));
      assert.deepEqual(users.map((u) => u.email), emails);
      assert.ok(retries.length > 0, 'some adds were rate limited');
      assert.ok(retries.every((r) => r.reason === '429 rate_limited' && r.delayMs >= 1000), JSON.stringify(retries));
      assert.equal((await client.users.list({ page_size: 100 })).total_count, 8, 'each user was added once');
      await Promise.all([client.close(), limitedAdmin.close()]);
    } finally {
      await limited.stop();
    }
  });

  test('deleting a workspace and a product; a stopped server is a network_error', TIMEOUT, async () => {
    const temp = await admin.workspaces.create({ subdomain: 'temp' });
    assert.match(temp.api_key.key, /^wum_/);
    await admin.workspaces.delete('temp');
    assert.equal((await apiError(admin.workspaces.get('temp'))).code, 'workspace_not_found');
    await admin.products.put('scratch', ['one']);
    await admin.products.delete('scratch');
    assert.equal((await apiError(admin.products.get('scratch'))).code, 'product_not_found');

    const gone = createClient({ baseUrl: 'http://acme.localhost:1', apiKey: 'k', retry: { maxAttempts: 2, sleep: async () => {} } });
    const error = await apiError(gone.users.list());
    assert.equal(error.status, 0);
    assert.equal(error.code, 'network_error');
    await gone.close();
  });
});
