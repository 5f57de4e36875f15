// one backend: postgres: the CLI against a server process, over the HTTP API the per-backend files cover (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import {
  createClient,
  type ApiKey,
  type CatalogueProduct,
  type CreatedApiKey,
  type CreatedOwnApiKey,
  type CreatedWorkspace,
  type IdentityProvider,
  type OwnAuditEventPage,
  type SecretsKeyRotation,
  type User,
  type UserHistoryPage,
  type UserPage,
  type UserWithEtag,
  type WebhookDeliveryPage,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
  type WorkspacePage,
} from 'wum/sdk';
import { BACKEND } from '../helpers/test-context.ts';
import { startWumServer, type WumServer } from '../../harness/wum-server.ts';
import { runWum } from '../../harness/run-wum.ts';
import { spawn } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { REPO_ROOT } from '../../harness/server-process.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { startOpenIdProvider } from '../helpers/oidc-provider.ts';
import { json, type ImportRun } from '../helpers/json.ts';

const TIMEOUT = { timeout: 180_000 };

/** What an export carries and an import reproduces. */
function essence(users: readonly User[]) {
  return users
    .map((u) => ({ email: u.email, role: u.role, first_name: u.first_name, last_name: u.last_name, apps: u.apps }))
    .sort((a, b) => a.email.localeCompare(b.email));
}

describe('wum usage errors exit with 2, help with 0 (no server needed)', () => {
  test('--help, and --help of a nested command, exit 0', async () => {
    const help = await runWum(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage: wum/);
    for (const name of ['users', 'products', 'admin']) assert.match(help.stdout, new RegExp(`\\b${name}\\b`));
    const add = await runWum(['users', 'add', '--help']);
    assert.equal(add.code, 0);
    assert.match(add.stdout, /--role <role>/);
    assert.match(add.stdout, /--json/);
    assert.match(add.stdout, /WUM_URL/, 'the global options are listed, with their variables');
    assert.equal((await runWum(['admin', 'products', 'put', '--help'])).code, 0);
  });

  test('unknown commands and options, bad values and missing arguments exit 2 with a message', async () => {
    const env = { WUM_URL: 'http://acme.localhost:1', WUM_API_KEY: 'wum_x' };
    for (const args of [
      ['bogus'],
      ['users', 'frobnicate'],
      ['users', 'list', '--colour'],
      ['users', 'list', '--status', 'sleeping'],
      ['users', 'list', '--page', '0'],
      ['users', 'list', '--page', '2', '--all'],
      ['users', 'add', 'ada@example.com'],
      ['users', 'add', 'ada@example.com', '--role', 'boss'],
      ['users', 'add', 'ada@example.com', '--role', 'owner', '--app', 'crm'],
      ['users', 'get'],
      ['admin', 'products', 'put', 'crm'],
    ]) {
      const run = await runWum(args, env);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /error/i, args.join(' '));
    }
    assert.equal((await runWum([])).code, 2, 'no command: help on stderr, exit 2');
  });

  test('missing configuration and unreadable files are usage errors (2)', async () => {
    const noUrl = await runWum(['users', 'list']);
    assert.equal(noUrl.code, 2);
    assert.match(noUrl.stderr, /--url or set WUM_URL/);
    const noKey = await runWum(['users', 'list'], { WUM_URL: 'http://acme.localhost:1' });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /--api-key or set WUM_API_KEY/);
    const badUrl = await runWum(['users', 'list', '--url', 'acme.localhost', '--api-key', 'k']);
    assert.equal(badUrl.code, 2);
    const noToken = await runWum(['admin', 'workspaces', 'list'], { WUM_ADMIN_URL: 'http://localhost:1' });
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /--admin-token or set WUM_ADMIN_TOKEN/);

    const dir = mkdtempSync(join(tmpdir(), 'wum-cli-'));
    try {
      const env = { WUM_URL: 'http://acme.localhost:1', WUM_API_KEY: 'wum_x' };
      const missing = await runWum(['users', 'import', join(dir, 'none.csv')], env);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /cannot read/);
      writeFileSync(join(dir, 'bad.csv'), 'email,role,firstname\nada@example.com,owner,Ada\n');
      const header = await runWum(['users', 'import', join(dir, 'bad.csv')], env);
      assert.equal(header.code, 2);
      assert.match(header.stderr, /unknown: firstname/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('--connect-to takes an IP address only', async () => {
    const run = await runWum(['users', 'list', '--connect-to', 'not-an-address'], { WUM_URL: 'http://acme.localhost:1', WUM_API_KEY: 'wum_x' });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /connectTo must be an IP address such as 127\.0\.0\.1, not "not-an-address"/);
  });

  test('an unreachable server is an API error (1) naming the cause', async () => {
    const run = await runWum(['users', 'list'], { WUM_URL: 'http://acme.localhost:1', WUM_API_KEY: 'wum_x' });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^error: network_error: GET http:\/\/acme\.localhost:1\/api\/external\/v2\/users: could not reach/m);
  });
});

describe(`wum against a server process [${BACKEND}]`, () => {
  let server: WumServer;
  let dir: string;
  let adminEnv: Record<string, string>;
  const keys: Record<string, string> = {};
  const env = (subdomain: string) => ({ WUM_URL: server.workspaceUrl(subdomain), WUM_API_KEY: keys[subdomain]! });

  before(async () => {
    server = await startWumServer({ RATE_LIMIT_PER_KEY: '0', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_POLL_INTERVAL_MS: '50' });
    dir = mkdtempSync(join(tmpdir(), 'wum-cli-'));
    adminEnv = { WUM_ADMIN_URL: server.adminUrl, WUM_ADMIN_TOKEN: server.adminToken };
  }, TIMEOUT);
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('admin: products put/list/delete, workspaces create (key shown once)/list/delete, keys create/list/revoke', TIMEOUT, async () => {
    const put = await runWum(['admin', 'products', 'put', 'crm', '--role', 'admin', '--role', 'member'], adminEnv);
    assert.equal(put.code, 0, put.stderr);
    assert.match(put.stdout, /Created product crm/);
    const again = await runWum(['admin', 'products', 'put', 'crm', '--role', 'admin', '--role', 'member', '--json'], adminEnv);
    assert.deepEqual(json<CatalogueProduct>(again).roles, ['admin', 'member']);
    assert.equal((await runWum(['admin', 'products', 'put', 'analytics', '--role', 'editor', '--role', 'viewer'], adminEnv)).code, 0);
    assert.equal((await runWum(['admin', 'products', 'put', 'scratch', '--role', 'x'], adminEnv)).code, 0);
    assert.equal((await runWum(['admin', 'products', 'delete', 'scratch'], adminEnv)).code, 0);
    const products = await runWum(['admin', 'products', 'list', '--json'], adminEnv);
    assert.deepEqual(json<CatalogueProduct[]>(products).map((p: { name: string }) => p.name), ['analytics', 'crm']);

    for (const subdomain of ['source', 'target']) {
      const created = await runWum(['admin', 'workspaces', 'create', subdomain, '--name', `The ${subdomain}`], adminEnv);
      assert.equal(created.code, 0, created.stderr);
      const key = /export WUM_API_KEY=(wum_\S+)/.exec(created.stdout);
      assert.ok(key, created.stdout);
      keys[subdomain] = key[1]!;
      assert.match(created.stdout, new RegExp(`export WUM_URL=http://${subdomain}\\.localhost:${server.port}`));
    }
    const listed = await runWum(['admin', 'workspaces', 'list', '--json'], adminEnv);
    assert.deepEqual(json<WorkspacePage>(listed).workspaces.map((w: { subdomain: string }) => w.subdomain), ['source', 'target']);
    const table = await runWum(['admin', 'workspaces', 'list'], adminEnv);
    assert.match(table.stdout, /The source/);

    const key = await runWum(['admin', 'keys', 'create', 'source', '--scope', '*', '--no-expiry', '--json'], adminEnv);
    assert.equal(key.code, 0, key.stderr);
    const { id } = json<CreatedApiKey>(key);
    assert.deepEqual(json<CreatedApiKey>(key).scopes, ['*']);
    assert.equal(json<CreatedApiKey>(key).expires_at, null, '--no-expiry: never');
    assert.match((await runWum(['admin', 'keys', 'list', 'source'], adminEnv)).stdout, new RegExp(id));
    assert.equal((await runWum(['admin', 'keys', 'revoke', 'source', id], adminEnv)).code, 0);
    const revoked = json<ApiKey[]>(await runWum(['admin', 'keys', 'list', 'source', '--json'], adminEnv));
    assert.ok(revoked.find((k: { id: string }) => k.id === id)?.revoked_at);

    // A named, scoped key, expiring in 90 days by default as the console's, refused outside its scope.
    const scoped = await runWum(['admin', 'keys', 'create', 'source', '--name', 'reader', '--scope', 'users:read', '--json'], adminEnv);
    assert.equal(scoped.code, 0, scoped.stderr);
    const reader = json<CreatedApiKey>(scoped);
    assert.equal(reader.name, 'reader');
    assert.deepEqual(reader.scopes, ['users:read']);
    const days = (Date.parse(reader.expires_at!) - Date.now()) / 86_400_000;
    assert.ok(days > 89.9 && days <= 90, `expires in ${days} days`);
    const listedKeys = await runWum(['admin', 'keys', 'list', 'source'], adminEnv);
    assert.match(listedKeys.stdout, /reader .*users:read/);
    const readerEnv = { WUM_URL: server.workspaceUrl('source'), WUM_API_KEY: reader.key };
    assert.equal((await runWum(['users', 'list'], readerEnv)).code, 0);
    const refusedAdd = await runWum(['users', 'add', 'nobody@example.com', '--role', 'non_owner'], readerEnv);
    assert.equal(refusedAdd.code, 1);
    assert.match(refusedAdd.stderr, /^error: insufficient_scope: .*users:write/m);
    // Scopes as a comma list, an expiry of one's choosing.
    const several = await runWum(['admin', 'keys', 'create', 'source', '--scope', 'users:read,products:read', '--scope', 'scim', '--expires-in', '30d', '--json'], adminEnv);
    assert.equal(several.code, 0, several.stderr);
    assert.deepEqual([...json<CreatedApiKey>(several).scopes].sort(), ['products:read', 'scim', 'users:read']);
    const thirty = (Date.parse(json<CreatedApiKey>(several).expires_at!) - Date.now()) / 86_400_000;
    assert.ok(thirty > 29.9 && thirty <= 30, `expires in ${thirty} days`);
    const badDuration = await runWum(['admin', 'keys', 'create', 'source', '--scope', 'scim', '--expires-in', '90 days'], adminEnv);
    assert.equal(badDuration.code, 2, badDuration.stderr);
    const badScope = await runWum(['admin', 'keys', 'create', 'source', '--scope', 'users:read,users:delete'], adminEnv);
    assert.equal(badScope.code, 2, badScope.stderr);
    assert.match(badScope.stderr, /users:delete: not a scope\. The scopes are users:read, users:write, .*scim.*, \*/);
    // No scope given: a usage error naming every scope, and no key made.
    const before = json<ApiKey[]>(await runWum(['admin', 'keys', 'list', 'source', '--json'], adminEnv)).length;
    const noScope = await runWum(['admin', 'keys', 'create', 'source', '--name', 'everything'], adminEnv);
    assert.equal(noScope.code, 2, noScope.stderr);
    assert.match(noScope.stderr, /^error: give the key's scopes with --scope .*users:read, users:write, .*scim/m);
    assert.equal(json<ApiKey[]>(await runWum(['admin', 'keys', 'list', 'source', '--json'], adminEnv)).length, before, 'no key made');
    const both = await runWum(['admin', 'keys', 'create', 'source', '--scope', 'scim', '--no-expiry', '--expires-in', '30d'], adminEnv);
    assert.equal(both.code, 2, both.stderr);
    // One spelling: the keys are an operator command, under `wum admin`.
    assert.equal((await runWum(['keys', 'list', 'source'], adminEnv)).code, 2);

    assert.equal((await runWum(['admin', 'workspaces', 'create', 'doomed'], adminEnv)).code, 0);
    assert.equal((await runWum(['admin', 'workspaces', 'delete', 'doomed'], adminEnv)).code, 0);
    const gone = await runWum(['admin', 'workspaces', 'delete', 'doomed'], adminEnv);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /^error: workspace_not_found: /m);
    const badToken = await runWum(['admin', 'workspaces', 'list'], { ...adminEnv, WUM_ADMIN_TOKEN: 'wrong-token-0123456789' });
    assert.equal(badToken.code, 1);
    assert.match(badToken.stderr, /invalid_admin_token/);
  });

  test('keys create/list/revoke and audit list: the workspace\'s own, through its API, never wider than the caller', TIMEOUT, async () => {
    const ownerEnv = { WUM_URL: server.workspaceUrl('source'), WUM_API_KEY: keys.source! };
    const made = await runWum(['keys', 'create', '--name', 'hooks', '--scope', 'webhooks:write', '--expires-in', '30d', '--json'], ownerEnv);
    assert.equal(made.code, 0, made.stderr);
    const hooks = json<CreatedOwnApiKey>(made);
    assert.deepEqual(hooks.scopes, ['webhooks:write']);
    assert.equal(hooks.created_by?.type, 'api_key');
    const noScope = await runWum(['keys', 'create', '--name', 'x'], ownerEnv);
    assert.equal(noScope.code, 2, 'a scope is required');
    assert.match(noScope.stderr, /--scope/);
    assert.match((await runWum(['keys', 'list'], ownerEnv)).stdout, /hooks .*webhooks:write/);

    const hooksEnv = { ...ownerEnv, WUM_API_KEY: hooks.key };
    const refused = await runWum(['keys', 'list'], hooksEnv);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^error: insufficient_scope: .*keys:write/m);
    assert.equal((await runWum(['keys', 'revoke', hooks.id], ownerEnv)).code, 0);

    const trail = await runWum(['audit', 'list', '--actor-type', 'api_key', '--json'], ownerEnv);
    assert.equal(trail.code, 0, trail.stderr);
    assert.deepEqual(
      json<OwnAuditEventPage>(trail).audit_events.slice(0, 2).map((e: { action: string; target_id: string }) => [e.action, e.target_id]),
      [
        ['api_key.revoked', hooks.id],
        ['api_key.created', hooks.id],
      ],
      'newest first',
    );
    const oldest = await runWum(['audit', 'list', '--oldest-first', '--page-size', '1'], ownerEnv);
    assert.match(oldest.stdout, /workspace\.created/);
    assert.equal((await runWum(['audit', 'list', '--actor-type', 'admin'], ownerEnv)).code, 2);
  });

  test('admin idp set/show/remove: the secret from the environment, never printed', TIMEOUT, async (t) => {
    assert.equal((await runWum(['admin', 'workspaces', 'create', 'sso'], adminEnv)).code, 0);
    const secret = 'cli-test-client-secret-value';
    // The issuer is discovered when it is set: a real provider on loopback.
    const op = await startOpenIdProvider(['http://sso.localhost/console/oidc/callback']);
    t.after(() => op.close());
    const unreachable = await runWum(['admin', 'idp', 'set', 'sso', '--issuer', 'http://127.0.0.1:9/op', '--client-id', 'wum-console'], {
      ...adminEnv,
      WUM_IDP_CLIENT_SECRET: secret,
    });
    assert.equal(unreachable.code, 1, unreachable.stderr);
    assert.match(unreachable.stderr, /^error: identity_provider_unreachable: /m);
    const set = await runWum(
      ['admin', 'idp', 'set', 'sso', '--issuer', op.issuer, '--client-id', 'wum-console'],
      { ...adminEnv, WUM_IDP_CLIENT_SECRET: secret },
    );
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /Set the identity provider of sso/);
    assert.match(set.stdout, /\/console\/oidc\/callback/);
    assert.ok(!set.stdout.includes(secret), 'the secret is not printed');
    const shown = await runWum(['admin', 'idp', 'show', 'sso', '--json'], adminEnv);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(json<IdentityProvider>(shown).client_id, 'wum-console');
    assert.ok(!shown.stdout.includes(secret));
    const missingSecret = await runWum(['admin', 'idp', 'set', 'sso', '--issuer', 'http://127.0.0.1:9/op', '--client-id', 'x'], adminEnv);
    assert.equal(missingSecret.code, 2, missingSecret.stderr);
    assert.equal((await runWum(['admin', 'idp', 'remove', 'sso'], adminEnv)).code, 0);
    const gone = await runWum(['admin', 'idp', 'show', 'sso'], adminEnv);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /^error: identity_provider_not_found: /m);
    assert.equal((await runWum(['admin', 'workspaces', 'delete', 'sso'], adminEnv)).code, 0);
  });

  test('admin rotate-secrets-key: re-encrypts what is not under SECRETS_KEY (nothing here), says so; --json; safe to repeat', TIMEOUT, async () => {
    for (let i = 0; i < 2; i += 1) {
      const rotated = await runWum(['admin', 'rotate-secrets-key'], adminEnv);
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.match(rotated.stdout, /^Re-encrypted 0 secrets with key [0-9a-f]{8}\.$/m);
      assert.match(rotated.stdout, /SECRETS_KEY_PREVIOUS is no longer needed/);
    }
    const rotation = await runWum(['admin', 'rotate-secrets-key', '--json'], adminEnv);
    assert.equal(rotation.code, 0, rotation.stderr);
    assert.deepEqual(Object.keys(json<SecretsKeyRotation>(rotation)).sort(), ['key_id', 'reencrypted', 'undecryptable']);
    assert.equal(json<SecretsKeyRotation>(rotation).undecryptable, 0);
  });

  test('users add/get/list/remove and products list; API errors exit 1 with code and detail on stderr', TIMEOUT, async () => {
    const products = await runWum(['products', 'list'], env('source'));
    assert.equal(products.code, 0);
    assert.match(products.stdout, /crm\s+│ admin, member/);

    const add = await runWum(
      ['users', 'add', 'ada@example.com', '--role', 'owner', '--app', 'crm:admin', '--app', 'analytics:viewer', '--first-name', 'Ada'],
      env('source'),
    );
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /^Added ada@example\.com\./);
    assert.match(add.stdout, /crm:admin;analytics:viewer/);
    const got = await runWum(['users', 'get', 'ADA@example.com', '--json'], env('source'));
    assert.deepEqual(json<User>(got).apps, [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }]);
    assert.equal(json<User>(got).first_name, 'Ada');

    const exists = await runWum(['users', 'add', 'ada@example.com', '--role', 'owner'], env('source'));
    assert.equal(exists.code, 1);
    assert.match(exists.stderr, /^error: user_already_exists: An active user with email ada@example\.com already exists\./m);
    assert.match(exists.stderr, /request id \S+/);
    const role = await runWum(['users', 'add', 'bob@example.com', '--role', 'non_owner', '--app', 'crm:wizard'], env('source'));
    assert.equal(role.code, 1);
    assert.match(role.stderr, /unknown_product_role/);
    assert.match(role.stderr, /user\.apps\[0\]\.role: /);

    assert.equal((await runWum(['users', 'add', 'bob@example.com', '--role', 'non_owner'], env('source'))).code, 0);
    const removed = await runWum(['users', 'remove', 'bob@example.com', '--json'], env('source'));
    assert.deepEqual(removed.json(), { email: 'bob@example.com', status: 'deactivated' });
    assert.equal((await runWum(['users', 'remove', 'bob@example.com'], env('source'))).code, 0, 'again: still 0');
    const lastOwner = await runWum(['users', 'remove', 'ada@example.com'], env('source'));
    assert.equal(lastOwner.code, 1);
    assert.match(lastOwner.stderr, /^error: last_owner: /m);

    const back = await runWum(['users', 'add', 'bob@example.com', '--role', 'non_owner', '--app', 'crm:member'], env('source'));
    assert.match(back.stdout, /^Reactivated bob@example\.com\./);

    const list = await runWum(['users', 'list'], env('source'));
    assert.equal(list.code, 0);
    assert.match(list.stdout, /ada@example\.com/);
    assert.match(list.stdout, /Page 1 of 1, 2 active users\./);
    const page = await runWum(['users', 'list', '--page', '2', '--page-size', '1', '--json'], env('source'));
    assert.deepEqual(json<UserPage>(page).users.map((u: User) => u.email), ['bob@example.com']);
    assert.deepEqual(json<UserPage>(page).pagination, { total_records: 2, current_page_number: 2, total_pages: 2, page_size: 1 });
    const missing = await runWum(['users', 'get', 'nobody@example.com'], env('source'));
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: user_not_found: No user with email nobody@example\.com/m);
  });

  test('users update (only the options given change), list with --q/--role/--app/--sort, history', TIMEOUT, async () => {
    const created = await runWum(['admin', 'workspaces', 'create', 'finder', '--json'], adminEnv);
    assert.equal(created.code, 0, created.stderr);
    keys.finder = json<CreatedWorkspace>(created).api_key.key;
    assert.equal((await runWum(['users', 'add', 'cy@example.com', '--role', 'non_owner', '--app', 'crm:member'], env('finder'))).code, 0);
    assert.equal((await runWum(['users', 'add', 'al@example.com', '--role', 'owner', '--first-name', 'Cyd'], env('finder'))).code, 0);
    const etag = json<UserWithEtag>(await runWum(['users', 'get', 'cy@example.com', '--json'], env('finder'))).etag;
    const updated = await runWum(
      ['users', 'update', 'cy@example.com', '--role', 'owner', '--app', 'analytics:viewer', '--first-name', 'Cy', '--if-match', etag, '--json'],
      env('finder'),
    );
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal(json<User>(updated).role, 'owner');
    assert.deepEqual(json<User>(updated).apps, [{ name: 'analytics', role: 'viewer' }]);
    assert.equal(json<User>(updated).last_name, '-', 'not given: kept');
    const stale = await runWum(['users', 'update', 'cy@example.com', '--last-name', 'X', '--if-match', etag], env('finder'));
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /^error: precondition_failed: /m);
    const renamed = await runWum(['users', 'update', 'cy@example.com', '--email', 'cyrus@example.com', '--clear-apps'], env('finder'));
    assert.equal(renamed.code, 0, renamed.stderr);
    assert.match(renamed.stdout, /^Updated cyrus@example\.com\./);

    const found = await runWum(['users', 'list', '--q', 'cy', '--role', 'owner', '--sort', '-email', '--json'], env('finder'));
    assert.deepEqual(json<UserPage>(found).users.map((u: User) => u.email), ['cyrus@example.com', 'al@example.com'], 'email or first name');
    const byApp = await runWum(['users', 'list', '--app', 'crm', '--all', '--json'], env('finder'));
    assert.deepEqual(byApp.json(), []);
    const exported = await runWum(['users', 'export', '--q', 'al'], env('finder'));
    assert.deepEqual((parse(exported.stdout, { columns: true }) as Array<{ email: string }>).map((r) => r.email), ['al@example.com']);
    const bad = await runWum(['users', 'list', '--sort', 'name'], env('finder'));
    assert.equal(bad.code, 2);

    const history = await runWum(['users', 'history', 'cyrus@example.com', '--json'], env('finder'));
    assert.equal(history.code, 0, history.stderr);
    assert.deepEqual(json<UserHistoryPage>(history).audit_events.map((e: { action: string }) => e.action), ['user.updated', 'user.updated', 'user.created']);
    const table = await runWum(['users', 'history', 'cyrus@example.com'], env('finder'));
    assert.match(table.stdout, /user\.updated .*│ email, apps /);
  });

  test('users add/update --expires-in, --expires-at, --no-expiry; a past date is the API\'s 422 (exit 1)', TIMEOUT, async () => {
    const created = await runWum(['admin', 'workspaces', 'create', 'expiring', '--json'], adminEnv);
    assert.equal(created.code, 0, created.stderr);
    keys.expiring = json<CreatedWorkspace>(created).api_key.key;
    const added = await runWum(['users', 'add', 'temp@example.com', '--role', 'non_owner', '--expires-in', '90d', '--json'], env('expiring'));
    assert.equal(added.code, 0, added.stderr);
    const ends = Date.parse(json<User>(added).expires_at!);
    assert.ok(Math.abs(ends - (Date.now() + 90 * 86_400_000)) < 600_000, 'about 90 days from now');
    const moved = await runWum(['users', 'update', 'temp@example.com', '--expires-at', '2031-01-02T03:04:05Z', '--json'], env('expiring'));
    assert.equal(json<User>(moved).expires_at, '2031-01-02T03:04:05.000Z');
    const cleared = await runWum(['users', 'update', 'temp@example.com', '--no-expiry', '--json'], env('expiring'));
    assert.equal(json<User>(cleared).expires_at, null);
    const past = await runWum(['users', 'update', 'temp@example.com', '--expires-at', '2001-01-01T00:00:00Z'], env('expiring'));
    assert.equal(past.code, 1);
    assert.match(past.stderr, /^error: expires_at_not_in_future: /m);
    assert.equal((await runWum(['users', 'add', 'x@example.com', '--role', 'non_owner', '--expires-in', '90 days'], env('expiring'))).code, 2);
  });

  test('users list --all and export walk every page', TIMEOUT, async () => {
    const wum = createClient({ baseUrl: server.workspaceUrl('source'), apiKey: keys.source! });
    const awkward = [
      { first_name: 'Zoë', last_name: "O'Brien, Jr." },
      { first_name: 'Say "hi"', last_name: 'Semi;colon' },
      { first_name: 'Multi\nline', last_name: ' padded ' },
      { first_name: '=1+1', last_name: 'Ünïcødé 名前' },
    ];
    for (let i = 0; i < 140; i += 1) {
      const names = awkward[i % awkward.length]!;
      await wum.users.add({
        email: `user${String(i).padStart(3, '0')}@example.com`,
        role: i % 17 === 0 ? 'owner' : 'non_owner',
        apps: i % 3 === 0 ? [] : i % 3 === 1 ? [{ name: 'crm', role: 'member' }] : [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'editor' }],
        ...(i % 5 === 0 ? {} : names),
      });
    }
    await wum.users.remove('user007@example.com');
    await wum.close();

    const all = await runWum(['users', 'list', '--all', '--json'], env('source'));
    assert.equal(json<User[]>(all).length, 141, 'ada, bob and 139 active of 140');
    const everything = await runWum(['users', 'list', '--all', '--status', 'all'], env('source'));
    assert.match(everything.stdout, /142 users\.$/m);

    const exportedJson = await runWum(['users', 'export', '--format', 'json', '--status', 'deactivated'], env('source'));
    assert.deepEqual(json<User[]>(exportedJson).map((u: User) => u.email), ['user007@example.com']);
    assert.deepEqual(json<User[]>(await runWum(['users', 'export', '--json', '--status', 'deactivated'], env('target'))), []);
  });

  test('export → import into another workspace reproduces the users; importing again skips them all', TIMEOUT, async () => {
    const exported = await runWum(['users', 'export'], env('source'));
    assert.equal(exported.code, 0, exported.stderr);
    const records = parse(exported.stdout, { columns: true }) as Array<Record<string, string>>;
    assert.deepEqual(Object.keys(records[0]!), ['email', 'role', 'first_name', 'last_name', 'apps', 'expires_at']);
    assert.equal(records.length, 141);
    assert.equal(records.find((r) => r.email === 'user002@example.com')!.apps, 'crm:admin;analytics:editor');
    const file = join(dir, 'export.csv');
    writeFileSync(file, exported.stdout);

    const imported = await runWum(['users', 'import', file, '--json'], env('target'));
    assert.equal(imported.code, 0, imported.stderr);
    assert.deepEqual(json<ImportRun>(imported).summary, { rows: 141, added: 141, reactivated: 0, skipped: 0, rejected: 0, not_attempted: 0 });
    assert.ok(!imported.stderr.includes('\u001b['), 'no progress bar when stderr is not a terminal: plain lines at most');

    const read = async (subdomain: string) => {
      const client = createClient({ baseUrl: server.workspaceUrl(subdomain), apiKey: keys[subdomain]! });
      const users: User[] = [];
      for await (const user of client.users.iterate({ status: 'active' })) users.push(user);
      await client.close();
      return users;
    };
    const [source, target] = await Promise.all([read('source'), read('target')]);
    assert.deepEqual(essence(target), essence(source));
    assert.ok(target.some((u) => u.last_name === "O'Brien, Jr." && u.first_name === 'Zoë'));
    assert.ok(target.some((u) => u.first_name === 'Multi\nline'));

    const again = await runWum(['users', 'import', file], env('target'));
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /141 rows: 0 added, 0 reactivated, 141 skipped \(already active\), 0 rejected\./);
  });
  test('--connect-to sends every request to the address given, the URL naming the workspace', TIMEOUT, async () => {
    const byAddress = await runWum(['users', 'list', '--page-size', '1', '--json', '--connect-to', '127.0.0.1'], env('target'));
    assert.equal(byAddress.code, 0, byAddress.stderr);
    assert.equal(json<UserPage>(byAddress).pagination.total_records, 141, "the Host header still names the URL's workspace");
    const admin = await runWum(['admin', 'workspaces', 'list', '--json'], { ...adminEnv, WUM_CONNECT_TO: '127.0.0.1' });
    assert.equal(admin.code, 0, admin.stderr);
    // The server listens on 127.0.0.1 only: sent to ::1, the same URL reaches nobody.
    const elsewhere = await runWum(['users', 'list', '--connect-to', '::1'], env('target'));
    assert.equal(elsewhere.code, 1);
    assert.match(elsewhere.stderr, /network_error: GET http:\/\/target\.localhost:\d+\/api\/external\/v2\/users: could not reach/);
  });

  test('admin webhooks create/list/get/update/deliveries/redeliver/rotate-secret/delete; events tail', TIMEOUT, async () => {
    const receiver = await startWebhookReceiver();
    try {
      const created = await runWum(['admin', 'webhooks', 'create', 'source', receiver.url, '--event-type', 'user.created', '--json'], adminEnv);
      assert.equal(created.code, 0, created.stderr);
      const { id, secret } = json<WebhookEndpointWithSecret>(created);
      assert.match(secret, /^whsec_/);
      const listed = await runWum(['admin', 'webhooks', 'list', 'source'], adminEnv);
      assert.match(listed.stdout, new RegExp(id));
      assert.ok(!listed.stdout.includes(secret));
      const updated = await runWum(['admin', 'webhooks', 'update', 'source', id, '--description', 'CLI hook', '--json'], adminEnv);
      assert.equal(json<WebhookEndpoint>(updated).description, 'CLI hook');
      assert.match((await runWum(['admin', 'webhooks', 'get', 'source', id], adminEnv)).stdout, /CLI hook/);
      const bad = await runWum(['admin', 'webhooks', 'create', 'source', 'https://10.0.0.1/x'], adminEnv);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /validation_failed/);

      // Following the feed: a change made now appears in the running tail.
      const tail = spawn(process.execPath, ['bin/wum.js', 'events', 'tail', '--json', '--interval', '100'], { cwd: REPO_ROOT, env: { ...process.env, ...env('source') } });
      let followed = '';
      tail.stdout.on('data', (chunk: Buffer) => (followed += chunk.toString()));
      try {
        assert.equal((await runWum(['users', 'add', 'hooked@example.com', '--role', 'non_owner'], env('source'))).code, 0);
        const [delivery] = await receiver.waitFor(1);
        const event = new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as { id: string; type: string };
        assert.equal(event.type, 'user.created');
        const deadline = Date.now() + 20_000;
        while (!followed.includes('hooked@example.com') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        assert.ok(followed.includes(event.id), 'the tail printed the new event');
      } finally {
        tail.kill();
      }
      const lines = followed.trim().split('\n').map((line) => JSON.parse(line) as { sequence: number });
      assert.deepEqual(lines.map((e) => e.sequence), lines.map((_, i) => i + 1), 'every event, in order');

      const once = await runWum(['events', 'tail', '--no-follow', '--after', String(lines.length - 1)], env('source'));
      assert.equal(once.code, 0, once.stderr);
      assert.match(once.stdout, new RegExp(`^${lines.length}  \\S+  user\\.created  hooked@example\\.com$`, 'm'));

      let deliveries: { deliveries: Array<{ id: string; status: string }> } = { deliveries: [] };
      for (let i = 0; i < 100 && deliveries.deliveries[0]?.status !== 'succeeded'; i += 1) {
        deliveries = json<WebhookDeliveryPage>(await runWum(['admin', 'webhooks', 'deliveries', 'source', id, '--json'], adminEnv));
      }
      assert.equal(deliveries.deliveries[0]!.status, 'succeeded');
      assert.equal((await runWum(['admin', 'webhooks', 'redeliver', 'source', id, deliveries.deliveries[0]!.id], adminEnv)).code, 0);
      await receiver.waitFor(2);
      assert.equal(receiver.received[1]!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id']);
      const rotated = await runWum(['admin', 'webhooks', 'rotate-secret', 'source', id], adminEnv);
      assert.match(rotated.stdout, /whsec_\S+/);
      assert.equal((await runWum(['admin', 'webhooks', 'delete', 'source', id], adminEnv)).code, 0);
      const gone = await runWum(['admin', 'webhooks', 'get', 'source', id], adminEnv);
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, /webhook_endpoint_not_found/);
    } finally {
      await receiver.close();
    }
  });
});
