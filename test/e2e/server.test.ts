import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { freePort } from '../../harness/free-port.ts';
import { SERVER_ARGS, listeningPid, sendRequest, spawnServer, type HttpResponse, type ServerProcess } from '../../harness/server-process.ts';
import { DEMO_KEY_FILE } from '../../src/server/demo-key.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * End-to-end: the real server process, started the way the README says (`npm start`), over a
 * socket. Every wait is bounded; every spawned process group is killed in `after`.
 */

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const API = '/api/external/v2';
/** PGlite costs seconds to start and migrate; generous so a loaded machine does not flake. */
const START_TIMEOUT_MS = 60_000;
/** The server's own shutdown grace is 10 s. */
const EXIT_TIMEOUT_MS = 20_000;
const TEST_TIMEOUT = { timeout: 120_000 };
const LISTENING = /Server listening at/;
const BANNER_CURL = /^\s*(curl -H "X-Api-Key: (\S+)" (http:\/\/\S+))\s*$/m;
const BANNER_EXPORT = /^\s*export WUM_API_KEY=(\S+)\s*$/m;

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function startWithNpm(env: Record<string, string>): ServerProcess {
  return spawnServer(NPM, ['start'], { LOG_LEVEL: 'info', ...env });
}

function startWithNode(env: Record<string, string>): ServerProcess {
  return spawnServer(process.execPath, SERVER_ARGS, { LOG_LEVEL: 'info', ...env });
}

function hasCurl(): boolean {
  return spawnSync('sh', ['-c', 'command -v curl'], { stdio: 'ignore' }).status === 0;
}

/** Runs a printed shell line and returns its stdout (bounded). */
function runShell(line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', line], { timeout: 15_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${line} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

function emails(listing: HttpResponse): string[] {
  return (json<'listUsers'>(listing).users as Array<{ email: string }>).map((u) => u.email);
}

/** Sends SIGTERM to `pid` and asserts that `server` (the process we spawned) exits with 0. */
async function assertGracefulStop(server: ServerProcess, pid: number): Promise<void> {
  process.kill(pid, 'SIGTERM');
  assert.equal(await server.waitForExit(EXIT_TIMEOUT_MS), 0, `exit status after SIGTERM${server.stderr()}`);
}

describe(`server process [${BACKEND}]`, () => {
  const spawned: ServerProcess[] = [];
  const tempDirs: string[] = [];
  after(() => {
    for (const server of spawned) server.kill();
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });

  function tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'wum-e2e-'));
    tempDirs.push(dir);
    return dir;
  }

  describe('a bad configuration', () => {
    async function runWith(env: Record<string, string>) {
      const dataDir = join(tempDir(), 'data');
      const server = startWithNode({ DATA_DIR: dataDir, PORT: String(await freePort()), ...env });
      spawned.push(server);
      const status = await server.waitForExit(START_TIMEOUT_MS);
      return { status, stderr: server.stderr(), stdout: server.stdout(), dataDir };
    }

    function assertRejected(result: { status: number | string; stderr: string; stdout: string; dataDir: string }) {
      assert.notEqual(result.status, 0);
      assert.equal(typeof result.status, 'number', 'exits with a status, not killed by a signal');
      assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace');
      assert.doesNotMatch(result.stdout, LISTENING, 'never listens');
      assert.equal(existsSync(result.dataDir), false, 'touches no storage');
    }

    test('PORT=abc: exits non-zero, naming PORT on stderr, without a stack trace', TEST_TIMEOUT, async () => {
      const result = await runWith({ PORT: 'abc' });
      assertRejected(result);
      assert.match(result.stderr, /\bPORT\b/);
    });

    test('ADMIN_TOKEN too short: exits non-zero, naming ADMIN_TOKEN', TEST_TIMEOUT, async () => {
      const result = await runWith({ ADMIN_TOKEN: 'short' });
      assertRejected(result);
      assert.match(result.stderr, /\bADMIN_TOKEN\b/);
    });

    test('a partial operator sign-in (issuer without client id, secret and emails): exits non-zero naming what is missing', TEST_TIMEOUT, async () => {
      const result = await runWith({ OPERATOR_OIDC_ISSUER: 'https://login.example.com' });
      assertRejected(result);
      for (const name of ['OPERATOR_OIDC_CLIENT_ID', 'OPERATOR_OIDC_CLIENT_SECRET']) assert.match(result.stderr, new RegExp(`missing.*\\b${name}\\b`));
    });

    test('DATABASE_URL without SECRETS_KEY: exits non-zero naming SECRETS_KEY, saying every replica needs the same key', TEST_TIMEOUT, async () => {
      // An empty value counts as unset, and keeps the harness from adding its test key.
      const result = await runWith({ DATABASE_URL: 'postgres://wum@127.0.0.1:1/wum', SECRETS_KEY: '' });
      assertRejected(result);
      assert.match(result.stderr, /\bSECRETS_KEY\b.*every replica needs the same key/);
    });

    test('several bad variables are all named at once', TEST_TIMEOUT, async () => {
      const result = await runWith({ PORT: '70000', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' });
      assertRejected(result);
      for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL']) assert.match(result.stderr, new RegExp(`\\b${name}\\b`));
    });
  });

  if (BACKEND === 'pglite') {
    describe('embedded PGlite in DATA_DIR, started with npm start', () => {
      let dataDir: string;
      let port: number;
      let first: ServerProcess;
      let apiKey: string;
      let demoHost: string;
      const api = (method: string, path: string, body?: unknown, key = apiKey) =>
        sendRequest(port, method, `${API}${path}`, { host: demoHost, headers: { 'x-api-key': key }, body });

      before(async () => {
        dataDir = tempDir();
        port = await freePort();
        demoHost = `demo.localhost:${port}`;
      });

      test('first start on an empty DATA_DIR, stdout piped: the demo key goes to a 0600 file in DATA_DIR named in the log, not into the log; its curl line works', TEST_TIMEOUT, async () => {
        first = startWithNpm({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN });
        spawned.push(first);
        const [logLine] = await first.waitForOutput(/^\{.*"file":.*\}$/m, START_TIMEOUT_MS);
        const file = join(dataDir, DEMO_KEY_FILE);
        assert.equal(json<{ file: string }>(logLine!).file, file, 'the log names the file');
        assert.equal(statSync(file).mode & 0o777, 0o600, 'readable by the owner only');
        const banner = readFileSync(file, 'utf8');
        const [, curlLine, curlKey, url] = BANNER_CURL.exec(banner) ?? [];
        const exported = BANNER_EXPORT.exec(banner);
        assert.ok(exported, 'the file exports WUM_API_KEY');
        apiKey = exported[1]!;
        assert.match(apiKey, /^wum_/);
        assert.equal(curlKey, apiKey);
        assert.equal(url, `http://demo.localhost:${port}${API}/users`);
        await first.waitForOutput(LISTENING, START_TIMEOUT_MS);
        for (const stream of [first.stdout(), first.stderr()]) {
          assert.ok(!stream.includes(apiKey), 'the key is neither in stdout (the JSON log) nor in stderr');
          assert.doesNotMatch(stream, /WUM_API_KEY/);
        }

        let body: string;
        if (hasCurl()) {
          body = await runShell(curlLine!);
        } else {
          const target = new URL(url);
          body = (await sendRequest(port, 'GET', target.pathname, { host: target.host, headers: { 'X-Api-Key': curlKey } })).body;
        }
        const listing = json<'listUsers'>(body);
        assert.deepEqual(
          listing.users.map((u: { email: string }) => u.email),
          ['owner@demo.example'],
        );
        assert.equal(listing.users[0]!.role, 'owner');
        assert.equal(listing.total_count, 1);
      });

      test('the demo workspace serves the external API over the socket', TEST_TIMEOUT, async () => {
        const products = await api('GET', '/products');
        assert.equal(products.status, 200);
        assert.deepEqual(products.json(), {
          products: [
            { name: 'analytics', roles: ['editor', 'viewer'] },
            { name: 'crm', roles: ['admin', 'member'] },
            { name: 'helpdesk', roles: ['agent', 'supervisor'] },
          ],
        });

        const added = await api('POST', '/users', {
          user: { email: 'eve@example.com', role: 'non_owner', first_name: 'Eve', apps: [{ name: 'helpdesk', role: 'agent' }] },
        });
        assert.equal(added.status, 201, added.body);
        assert.equal(json<'User'>(added).email, 'eve@example.com');
        assert.equal(json<'User'>(added).last_name, '-');
        assert.deepEqual(json<'User'>(added).apps, [{ name: 'helpdesk', role: 'agent' }]);
        const location = added.headers.location as string;
        assert.equal(location, `${API}/users/eve%40example.com`);

        const fetched = await sendRequest(port, 'GET', location, { host: demoHost, headers: { 'x-api-key': apiKey } });
        assert.equal(fetched.status, 200);
        assert.deepEqual(fetched.json(), added.json());

        assert.equal((await api('POST', '/users', { user: { email: 'gone@example.com', role: 'non_owner', apps: [] } })).status, 201);
        const removed = await api('DELETE', '/users/gone%40example.com');
        assert.equal(removed.status, 204);
        assert.equal(removed.body, '');

        const listing = await api('GET', '/users');
        assert.equal(listing.status, 200);
        assert.deepEqual(emails(listing), ['owner@demo.example', 'eve@example.com']);
        assert.equal(json<'listUsers'>(listing).total_count, 2);
        assert.deepEqual(emails(await api('GET', '/users?status=deactivated')), ['gone@example.com']);

        const wrongKey = await api('GET', '/users', undefined, `wum_${randomBytes(32).toString('base64url')}`);
        assert.equal(wrongKey.status, 401);
        assert.equal(json<'Problem'>(wrongKey).code, 'invalid_api_key');
      });

      test('GET /healthz and /readyz answer without a key on any host, /metrics on the operator host', TEST_TIMEOUT, async () => {
        const health = await sendRequest(port, 'GET', '/healthz');
        assert.equal(health.status, 200);
        const ready = await sendRequest(port, 'GET', '/readyz', { host: demoHost });
        assert.equal(ready.status, 200);
        const metrics = await sendRequest(port, 'GET', '/metrics');
        assert.equal(metrics.status, 200);
        assert.match(metrics.headers['content-type'] as string, /^text\/plain/);
        assert.match(metrics.body, /^# TYPE http_requests_total counter$/m);
        assert.match(metrics.body, /^http_requests_total\{[^}]*route="\/api\/external\/v2\/users"[^}]*\} \d+/m);
      });

      test('SIGTERM to the server process stops it gracefully: npm start exits 0', TEST_TIMEOUT, async () => {
        const pid = listeningPid(first.stdout());
        assert.ok(pid, 'the listening log line carries the pid');
        await assertGracefulStop(first, pid);
        await assert.rejects(sendRequest(port, 'GET', '/healthz', { timeoutMs: 2000 }), 'the port is closed');
      });

      test('a restart on the same DATA_DIR (DATABASE_URL empty) keeps users and keys, prints no banner, and stops on SIGTERM with 0', TEST_TIMEOUT, async () => {
        // An exported but empty DATABASE_URL counts as unset: still the embedded database.
        const second = startWithNode({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN, DATABASE_URL: '' });
        spawned.push(second);
        await second.waitForOutput(LISTENING, START_TIMEOUT_MS);

        const listing = await api('GET', '/users?status=all');
        assert.equal(listing.status, 200, 'the key printed at first start still works');
        const users = json<'listUsers'>(listing).users as Array<{ email: string; status: string; apps: unknown }>;
        assert.deepEqual(
          users.map((u) => [u.email, u.status]),
          [['owner@demo.example', 'active'], ['eve@example.com', 'active'], ['gone@example.com', 'deactivated']],
        );
        assert.deepEqual(users[1]!.apps, [{ name: 'helpdesk', role: 'agent' }]);
        assert.equal(json<'listProducts'>(await api('GET', '/products')).products.length, 3, 'no second catalogue');

        await assertGracefulStop(second, second.child.pid!);
        assert.doesNotMatch(second.stdout(), /WUM_API_KEY|curl /, 'the banner is printed only on the first start');
      });
    });
  } else {
    describe('PostgreSQL via DATABASE_URL, started with npm start', () => {
      let database: PostgresDatabase | undefined;
      let port: number;
      let server: ServerProcess;
      let apiKey: string;
      const host = () => `acme.localhost:${port}`;
      const api = (method: string, path: string, body?: unknown) =>
        sendRequest(port, method, `${API}${path}`, { host: host(), headers: { 'x-api-key': apiKey }, body });
      const admin = (method: string, path: string, body?: unknown) =>
        sendRequest(port, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });

      before(async () => {
        database = await createPostgresDatabase('wum_e2e');
        port = await freePort();
      });
      after(async () => {
        for (const s of spawned) s.kill();
        await database?.drop();
      });

      test('starts on a new database and is ready', TEST_TIMEOUT, async () => {
        server = startWithNpm({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: database!.url, ADMIN_TOKEN });
        spawned.push(server);
        await server.waitForOutput(LISTENING, START_TIMEOUT_MS);
        assert.equal((await sendRequest(port, 'GET', '/healthz')).status, 200);
        assert.equal((await sendRequest(port, 'GET', '/readyz')).status, 200);
        const metrics = await sendRequest(port, 'GET', '/metrics');
        assert.equal(metrics.status, 200);
        assert.match(metrics.body, /^# TYPE http_requests_total counter$/m);
      });

      test('the admin API creates a workspace and products; users are added, listed and deactivated over HTTP', TEST_TIMEOUT, async () => {
        const workspace = await admin('POST', '/workspaces', { subdomain: 'acme', name: 'Acme Inc' });
        assert.equal(workspace.status, 201, workspace.body);
        apiKey = json<'createWorkspace'>(workspace).api_key.key;
        assert.match(apiKey, /^wum_/);
        const product = await admin('PUT', '/products/crm', { roles: ['admin', 'member'] });
        assert.ok([200, 201].includes(product.status), product.body);

        assert.deepEqual((await api('GET', '/products')).json(), { products: [{ name: 'crm', roles: ['admin', 'member'] }] });
        const empty = await api('GET', '/users');
        assert.equal(empty.status, 200);
        assert.deepEqual(json<'listUsers'>(empty).users, []);
        assert.equal(json<'listUsers'>(empty).total_count, 0);

        const owner = await api('POST', '/users', { user: { email: 'boss@acme.example', role: 'owner', apps: [{ name: 'crm', role: 'admin' }] } });
        assert.equal(owner.status, 201, owner.body);
        const member = await api('POST', '/users', { user: { email: 'Sam@Acme.example', role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] } });
        assert.equal(member.status, 201, member.body);
        assert.equal(json<'Problem'>(await api('POST', '/users', { user: { email: 'sam@acme.example', role: 'non_owner', apps: [] } })).code, 'user_already_exists');

        assert.deepEqual(emails(await api('GET', '/users')), ['boss@acme.example', 'Sam@Acme.example']);
        const fetched = await api('GET', '/users/sam%40acme.example');
        assert.equal(fetched.status, 200);
        assert.deepEqual(json<'User'>(fetched).apps, [{ name: 'crm', role: 'member' }]);

        assert.equal((await api('DELETE', '/users/sam%40acme.example')).status, 204);
        assert.equal(json<'Problem'>(await api('DELETE', '/users/boss%40acme.example')).code, 'last_owner');
        const listing = await api('GET', '/users');
        assert.deepEqual(emails(listing), ['boss@acme.example']);
        assert.equal(json<'listUsers'>(listing).total_count, 1);
      });

      test('SIGTERM stops it with 0; no demo banner with DATABASE_URL; a restart sees the same data', TEST_TIMEOUT, async () => {
        const pid = listeningPid(server.stdout());
        assert.ok(pid, 'the listening log line carries the pid');
        await assertGracefulStop(server, pid);
        assert.doesNotMatch(server.stdout(), /WUM_API_KEY|curl /);

        const again = startWithNode({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: database!.url, ADMIN_TOKEN });
        spawned.push(again);
        await again.waitForOutput(LISTENING, START_TIMEOUT_MS);
        const listing = await api('GET', '/users?status=all');
        assert.equal(listing.status, 200, 'the key still works');
        assert.deepEqual(
          (json<'listUsers'>(listing).users as Array<{ email: string; status: string }>).map((u) => [u.email, u.status]),
          [['boss@acme.example', 'active'], ['Sam@Acme.example', 'deactivated']],
        );
        await assertGracefulStop(again, again.child.pid!);
        assert.doesNotMatch(again.stdout(), /WUM_API_KEY|curl /);
      });
    });
  }
});
