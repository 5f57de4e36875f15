// one backend: pglite: the web console in Chromium, over the HTTP API the per-backend files cover (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../scripts/build-console.ts';
import { CONSOLE_CSP } from '../../src/http/plugins/console.ts';
import { assertAccessible, launchChromium, openPage, saveScreenshot, type WatchedPage } from '../../harness/browser.ts';
import { sendRequest, type HttpResponse } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { startOpenIdProvider } from '../helpers/oidc-provider.ts';
import { startWumServer, type WumServer } from '../../harness/wum-server.ts';
import { json } from '../helpers/json.ts';

/*
 * The web console end to end: the real server process on this backend, the console it serves
 * at /console/, and Debian's Chromium driving it as a person would (one server and one browser
 * for the file). Every page is checked with axe-core; every page also runs under the console's
 * CSP, and any CSP violation, console error or uncaught exception fails the test that caused it.
 */

const API = '/api/external/v2';
const WORKSPACE = 'acme';
/**
 * Screenshots of every page go to docs/console/ when asked (`npm run screenshots`): not on every
 * run, which would leave the checkout changed (dates, request ids).
 */
const SCREENSHOTS = process.env.WUM_SCREENSHOTS === '1';
const TEST_TIMEOUT = { timeout: 120_000 };

describe(`web console [${BACKEND}]`, () => {
  let server: WumServer;
  let browser: Browser;
  let apiKey: string;
  let origin: string;
  let opened: WatchedPage[] = [];
  /** Receives the webhooks of the endpoint the console adds (plain http on loopback). */
  let receiver: WebhookReceiver;

  /** A request to the server as a script would send it (to arrange data, or check what the console did). */
  function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResponse> {
    const admin = path.startsWith('/admin/');
    return sendRequest(server.port, method, path, {
      host: admin ? `localhost:${server.port}` : `${WORKSPACE}.localhost:${server.port}`,
      headers: admin ? { authorization: `Bearer ${server.adminToken}`, ...headers } : { 'x-api-key': apiKey, ...headers },
      ...(body === undefined ? {} : { body }),
    });
  }

  async function addUser(email: string, user: Record<string, unknown> = {}): Promise<void> {
    const response = await call('POST', `${API}/users`, { user: { email, role: 'non_owner', apps: [], ...user } });
    assert.equal(response.status, 201, response.body);
  }

  /** A fresh page; its problems are checked when the test ends. */
  async function open(): Promise<Page> {
    const watched = await openPage(browser);
    opened.push(watched);
    return watched.page;
  }

  /** Opens the console on the workspace's host, signed in with its key (through the sign-in form). */
  async function signedIn(path = '/console/'): Promise<Page> {
    const page = await open();
    await page.goto(`${origin}${path}`);
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: `Sign in to ${WORKSPACE}` }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    return page;
  }

  /**
   * Opens the console off any workspace host (no key form there), signed in with the operator
   * token, on the Workspaces page; the clipboard is allowed (for the copy buttons).
   */
  async function signedInAsOperator(): Promise<Page> {
    const page = await open();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://localhost:${server.port}` });
    await page.goto(`http://localhost:${server.port}/console/`);
    assert.equal(await page.getByLabel('API key').count(), 0, 'no workspace key form off a workspace host');
    await page.getByLabel('Operator token').fill(server.adminToken);
    await page.getByRole('button', { name: 'Sign in as operator' }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
    return page;
  }

  before(async () => {
    await buildConsole({ ifStale: true });
    // Webhooks to the local receiver: plain http to loopback, polled often.
    [server, browser, receiver] = await Promise.all([
      startWumServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_POLL_INTERVAL_MS: '50', WEBHOOK_RETRY_SCHEDULE: '100ms,100ms' }),
      launchChromium(),
      startWebhookReceiver(),
    ]);
    origin = `http://${WORKSPACE}.localhost:${server.port}`;
    for (const [name, roles] of [
      ['analytics', ['viewer', 'editor']],
      ['crm', ['admin', 'member']],
    ] as const) {
      assert.equal((await call('PUT', `/admin/v1/products/${name}`, { roles })).status, 201);
    }
    const created = await call('POST', '/admin/v1/workspaces', { subdomain: WORKSPACE, name: 'Acme Inc' });
    assert.equal(created.status, 201, created.body);
    apiKey = json<'createWorkspace'>(created).api_key.key;
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await receiver?.close();
  });

  test.afterEach(async () => {
    const problems = opened.flatMap((watched) => watched.problems);
    await Promise.all(opened.map((watched) => watched.context.close()));
    opened = [];
    assert.deepEqual(problems, [], 'console errors, page errors or CSP violations');
  });

  test('serves the console under its own strict CSP, the shell revalidated and hashed assets cached a year', TEST_TIMEOUT, async () => {
    const redirect = await call('GET', '/console');
    assert.equal(redirect.status, 308);
    assert.equal(redirect.headers.location, '/console/');
    for (const path of ['/console/', '/console/users/ada%40example.com?status=all']) {
      const shell = await call('GET', path);
      assert.equal(shell.status, 200);
      assert.match(String(shell.headers['content-type']), /^text\/html/);
      assert.equal(shell.headers['content-security-policy'], CONSOLE_CSP);
      assert.equal(shell.headers['cache-control'], 'no-cache');
      assert.doesNotMatch(shell.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    }
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec((await call('GET', '/console/')).body)?.[1];
    assert.ok(script);
    const asset = await call('GET', script, undefined, { 'accept-encoding': 'br, gzip' });
    assert.equal(asset.status, 200);
    assert.equal(asset.headers['content-encoding'], 'br');
    assert.match(String(asset.headers['cache-control']), /max-age=31536000.*immutable|immutable.*max-age=31536000/);
    assert.equal((await call('GET', '/console/assets/missing.js')).status, 404);
    const posted = await call('POST', '/console/', {});
    assert.equal(posted.status, 405);
    assert.equal(posted.headers.allow, 'GET, HEAD');
    // The API keeps its own policy.
    assert.equal((await call('GET', `${API}/products`)).headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'");
  });

  test('signs in with the workspace key, exchanged for an HttpOnly session cookie, and shows the empty state', TEST_TIMEOUT, async () => {
    const page = await open();
    await page.goto(`${origin}/console/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await assertAccessible(page, 'sign-in');
    if (SCREENSHOTS) await saveScreenshot(page, 'sign-in');
    await page.getByLabel('API key').fill('wum_not-a-key');
    await page.getByRole('button', { name: `Sign in to ${WORKSPACE}` }).click();
    const refused = page.getByRole('alert');
    await refused.getByText('invalid_api_key').waitFor();
    assert.match(await refused.innerText(), /Request id [0-9a-f-]{36}/);
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: `Sign in to ${WORKSPACE}` }).click();
    await page.getByText('This workspace has no active users yet.').waitFor();
    assert.equal(new URL(page.url()).pathname, '/console/users');
    assert.doesNotMatch(page.url(), /wum_/);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    // The key was exchanged for a session: the page keeps no key, and its script cannot read the cookie.
    assert.doesNotMatch(await page.evaluate(() => JSON.stringify(sessionStorage)), /wum_/);
    assert.equal(await page.evaluate(() => document.cookie), '');
    const [cookie] = await page.context().cookies();
    assert.equal(cookie?.name, 'wum_session');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.path, '/');
    assert.notEqual(cookie.value, apiKey);
    const sessionCookie = `${cookie.name}=${cookie.value}`;
    const host = `${WORKSPACE}.localhost:${server.port}`;
    const forged = await sendRequest(server.port, 'POST', `${API}/users`, {
      host,
      headers: { cookie: sessionCookie, origin: 'http://evil.example' },
      body: { user: { email: 'forged@example.com', role: 'non_owner', apps: [] } },
    });
    assert.equal(forged.status, 403, 'a cross-origin write with the cookie is refused');
    assert.equal((await call('GET', `${API}/users/forged@example.com`)).status, 404);
    await assertAccessible(page, 'users (empty)');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    let ended = 200;
    for (let attempt = 0; attempt < 20 && ended === 200; attempt += 1) {
      ended = (await sendRequest(server.port, 'GET', `${API}/users`, { host, headers: { cookie: sessionCookie } })).status;
      if (ended === 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(ended, 401, 'sign-out ended the session on the server');
  });

  test('adds a user from the catalogue pickers; the API’s field errors show beside the field', TEST_TIMEOUT, async () => {
    const page = await signedIn('/console/users/new');
    await page.getByRole('heading', { name: 'Add a user' }).waitFor();
    await page.getByRole('group', { name: 'crm' }).getByLabel('admin').waitFor();
    await assertAccessible(page, 'add user');
    await page.getByLabel('Email').fill('not-an-email');
    await page.getByRole('button', { name: 'Add user' }).click();
    const emailError = page.locator('#new-email-error');
    await emailError.waitFor();
    assert.equal(await page.getByLabel('Email').getAttribute('aria-invalid'), 'true');
    assert.match(await page.getByRole('alert').innerText(), /validation_failed[\s\S]*Request id/);
    await assertAccessible(page, 'add user with errors');
    if (SCREENSHOTS) await saveScreenshot(page, 'add-user');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByLabel('First name').fill('Ada');
    await page.getByLabel('Last name').fill('Lovelace');
    await page.getByRole('group', { name: 'crm' }).getByLabel('admin').check();
    await page.getByRole('group', { name: 'analytics' }).getByLabel('viewer').check();
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.getByRole('status').getByText('Added.').waitFor();
    assert.equal(new URL(page.url()).pathname, '/console/users/ada%40example.com');
    const stored = json<'User'>(await call('GET', `${API}/users/ada@example.com`));
    assert.deepEqual(
      { first_name: stored.first_name, role: stored.role, apps: stored.apps },
      { first_name: 'Ada', role: 'non_owner', apps: [{ name: 'analytics', role: 'viewer' }, { name: 'crm', role: 'admin' }] },
    );
  });

  test('finds users: search as you type, filters, sort and pages in the URL; a shared link restores them', TEST_TIMEOUT, async () => {
    for (let i = 1; i <= 34; i += 1) await addUser(`member${String(i).padStart(2, '0')}@example.com`, { apps: [{ name: 'crm', role: 'member' }] });
    await addUser('zed@example.com', { first_name: 'Zed', role: 'owner' });
    const page = await signedIn();
    const status = page.getByRole('navigation', { name: 'Pagination' }).getByRole('paragraph');
    await status.getByText('Page 1 of 2 · 36 users').waitFor();
    await assertAccessible(page, 'users');
    await page.getByRole('navigation', { name: 'Pagination' }).getByRole('link', { name: 'Next' }).click();
    await status.getByText('Page 2 of 2 · 36 users').waitFor();
    assert.equal(new URL(page.url()).searchParams.get('page'), '2');
    await page.goBack();
    await status.getByText('Page 1 of 2 · 36 users').waitFor();

    await page.getByLabel('Search').pressSequentially('ZE', { delay: 30 });
    await status.getByText('Page 1 of 1 · 1 user').waitFor();
    assert.equal(new URL(page.url()).searchParams.get('q'), 'ZE');
    assert.deepEqual(await page.locator('tbody th').allInnerTexts(), ['zed@example.com']);
    await page.getByLabel('Search').fill('');
    await page.getByLabel('Workspace role').selectOption('owner');
    await status.getByText('· 1 user').waitFor();
    await page.getByLabel('Workspace role').selectOption('');
    await page.getByLabel('Product role').selectOption('crm:admin');
    await page.locator('tbody th', { hasText: 'ada@example.com' }).waitFor();
    await status.getByText('Page 1 of 1 · 1 user').waitFor();
    assert.deepEqual(await page.locator('tbody th').allInnerTexts(), ['ada@example.com']);
    await page.getByLabel('Product role').selectOption('');
    await page.getByRole('button', { name: 'Email' }).click();
    await page.getByRole('columnheader', { name: 'Email' }).and(page.locator('[aria-sort="ascending"]')).waitFor();
    assert.equal(new URL(page.url()).searchParams.get('sort'), 'email');
    await page.getByRole('button', { name: 'Email' }).click();
    await page.locator('tbody th').first().getByText('zed@example.com').waitFor();
    if (SCREENSHOTS) {
      await page.getByLabel('Sort by').selectOption('created_at');
      await status.getByText('Page 1 of 2').waitFor();
      await saveScreenshot(page, 'users');
    }

    const shared = await open();
    await shared.goto(`${origin}/console/users?q=member3&sort=-email&size=10`);
    await shared.getByLabel('API key').fill(apiKey);
    await shared.getByRole('button', { name: `Sign in to ${WORKSPACE}` }).click();
    await shared.getByText('Page 1 of 1 · 5 users').waitFor();
    assert.equal(await shared.getByLabel('Search').inputValue(), 'member3');
    assert.equal(await shared.getByLabel('Sort by').inputValue(), '-email');
    assert.deepEqual((await shared.locator('tbody th').allInnerTexts())[0], 'member34@example.com');

    await shared.goto(`${origin}/console/users?q=nobody-has-this`);
    await shared.getByText('No users match these filters.').waitFor();
    await assertAccessible(shared, 'users (no match)');
  });

  test('edits a user’s roles in place; a stale edit is refused and offers a reload', TEST_TIMEOUT, async () => {
    const page = await signedIn('/console/users/ada%40example.com');
    await page.getByRole('heading', { name: 'ada@example.com' }).waitFor();
    await assertAccessible(page, 'user');
    const crm = page.getByRole('region', { name: 'Edit' }).getByRole('group', { name: 'crm' });
    await crm.getByLabel('member').check();
    await page.getByRole('radio', { name: /Owner/ }).check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    let stored = await call('GET', `${API}/users/ada@example.com`);
    assert.equal(json<'User'>(stored).role, 'owner');
    assert.deepEqual(json<'User'>(stored).apps.map((a: { role: string }) => a.role).sort(), ['admin', 'member', 'viewer']);

    // Someone else changes Ada meanwhile; the page still holds the version it read.
    const behind = await call('PATCH', `${API}/users/ada@example.com`, { user: { last_name: 'King' } });
    assert.equal(behind.status, 200);
    await page.getByLabel('First name').fill('Augusta');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('alert').getByText('Someone else changed this user').waitFor();
    if (SCREENSHOTS) await saveScreenshot(page, 'user-conflict');
    stored = await call('GET', `${API}/users/ada@example.com`);
    assert.equal(json<'User'>(stored).first_name, 'Ada', 'nothing saved on a conflict');
    await page.getByRole('button', { name: 'Reload the user' }).click();
    await page.waitForFunction(() => (document.querySelector('#edit-last') as HTMLInputElement | null)?.value === 'King');
    assert.equal(await page.getByLabel('First name').inputValue(), 'Ada');
    await page.getByLabel('First name').fill('Augusta');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    assert.equal(json<'User'>(await call('GET', `${API}/users/ada@example.com`)).first_name, 'Augusta');
  });

  test('deactivates and reactivates a user after a confirmation; the history shows both', TEST_TIMEOUT, async () => {
    const page = await signedIn('/console/users/member01%40example.com');
    await page.getByRole('button', { name: 'Deactivate' }).click();
    const dialog = page.getByRole('dialog', { name: 'Deactivate member01@example.com?' });
    await dialog.waitFor();
    await assertAccessible(page, 'confirmation dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(json<'User'>(await call('GET', `${API}/users/member01@example.com`)).status, 'active', 'cancel changes nothing');
    await page.getByRole('button', { name: 'Deactivate' }).click();
    await dialog.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByRole('button', { name: 'Reactivate' }).waitFor();
    assert.equal(json<'User'>(await call('GET', `${API}/users/member01@example.com`)).status, 'deactivated');
    await page.getByRole('button', { name: 'Reactivate' }).click();
    await page.getByRole('dialog', { name: 'Reactivate member01@example.com?' }).getByRole('button', { name: 'Reactivate' }).click();
    await page.getByRole('button', { name: 'Deactivate' }).waitFor();
    assert.equal(json<'User'>(await call('GET', `${API}/users/member01@example.com`)).status, 'active');
    const history = page.getByRole('region', { name: 'History' });
    // A PATCH of the status is audited as user.updated (docs/contract.md Part B), its change shown.
    // Named for people, with the field's change as a diff.
    await history.getByRole('row', { name: /Reactivated user\.updated.*Status: deactivated → active/ }).waitFor();
    await history.getByRole('cell', { name: 'Deactivated user.deactivated' }).waitFor();
    await history.getByRole('cell', { name: 'Added user.created' }).waitFor();
    // Who: the key that made the change, by its name and prefix (this one has no name: its prefix).
    await history.getByRole('cell', { name: /^wum_\S{8} \(api_key\)$/ }).first().waitFor();
    if (SCREENSHOTS) await saveScreenshot(page, 'user');
  });

  test('deactivates selected users in bulk, with a progress bar and a report of what failed', TEST_TIMEOUT, async () => {
    const page = await signedIn('/console/users?q=member0&sort=email');
    await page.getByText('Page 1 of 1 · 9 users').waitFor();
    await page.getByRole('checkbox', { name: 'Select member02@example.com' }).check();
    await page.getByRole('checkbox', { name: 'Select member03@example.com' }).check();
    await page.getByText('2 users selected').waitFor();
    await page.getByRole('button', { name: 'Deactivate selected' }).click();
    await page.getByRole('dialog', { name: 'Deactivate 2 users?' }).getByRole('button', { name: 'Deactivate 2 users' }).click();
    await page.getByText('Deactivated 2 of 2 users.').waitFor();
    await page.getByText('Page 1 of 1 · 7 users').waitFor();
    for (const email of ['member02@example.com', 'member03@example.com']) {
      assert.equal(json<'User'>(await call('GET', `${API}/users/${email}`)).status, 'deactivated');
    }
  });

  test('imports a CSV file: a progress bar, then a report of every row with the reason a bad row was rejected', TEST_TIMEOUT, async () => {
    const page = await signedIn('/console/import');
    await assertAccessible(page, 'import');
    const csv = [
      'email,role,first_name,last_name,apps',
      'grace@example.com,non_owner,Grace,Hopper,crm:member;analytics:editor',
      'bad@example.com,non_owner,Bad,Row,crm:wizard',
      'member02@example.com,non_owner,,,crm:member',
      'zed@example.com,owner,,,',
      'GRACE@example.com,non_owner,,,',
    ].join('\n');
    await page.getByLabel('CSV file').setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByText('people.csv: 5 rows, of which 1 cannot be sent').waitFor();
    await page.getByRole('button', { name: 'Import 5 rows' }).click();
    const report = page.getByRole('region', { name: 'Report' });
    await report.getByText('5 rows: 1 added, 1 reactivated, 1 skipped (already active), 2 rejected.').waitFor();
    const rows = await report.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => (c as HTMLElement).innerText)));
    assert.deepEqual(rows.map((r) => [r[0], r[1], r[2]]), [
      ['2', 'grace@example.com', 'Added'],
      ['3', 'bad@example.com', 'Rejected'],
      ['4', 'member02@example.com', 'Reactivated'],
      ['5', 'zed@example.com', 'Skipped (already active)'],
      ['6', 'GRACE@example.com', 'Rejected'],
    ]);
    assert.match(rows[1]![3]!, /unknown_product_role/);
    assert.match(rows[1]![4]!, /^[0-9a-f-]{36}$/, 'the request id of the refusal');
    assert.match(rows[4]![3]!, /duplicate_row/);
    await assertAccessible(page, 'import report');
    if (SCREENSHOTS) await saveScreenshot(page, 'import');
    assert.equal(json<'User'>(await call('GET', `${API}/users/grace@example.com`)).last_name, 'Hopper');
    assert.equal((await call('GET', `${API}/users/bad@example.com`)).status, 404);
  });

  test('exports the current filter as the CSV the importers read', TEST_TIMEOUT, async () => {
    const page = await signedIn('/console/users?app=analytics&sort=email');
    await page.getByText('Page 1 of 1 · 2 users').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    assert.equal(download.suggestedFilename(), 'users.csv');
    const text = await readFile((await download.path()), 'utf8');
    assert.equal(
      text,
      'email,role,first_name,last_name,apps,expires_at\n' +
        'ada@example.com,owner,Augusta,King,analytics:viewer;crm:admin;crm:member,\n' +
        'grace@example.com,non_owner,Grace,Hopper,crm:member;analytics:editor,\n',
    );
  });

  test('works with the keyboard alone: sign in, go to a page, pick roles, confirm a dialog', TEST_TIMEOUT, async () => {
    const page = await open();
    await page.goto(`${origin}/console/`);
    // The page first asks whether a session cookie is there; a person tabs once the form is shown.
    await page.locator('#sign-in-workspace').waitFor();
    await page.keyboard.press('Tab'); // skip link
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'sign-in-workspace');
    await page.keyboard.type(apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    await page.getByRole('link', { name: 'Add user' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Add a user' }).waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1', 'the new page’s heading takes focus');
    await page.keyboard.press('Tab');
    await page.keyboard.type('keys@example.com');
    const tabUntil = async (name: string) => {
      for (let i = 0; i < 30; i += 1) {
        await page.keyboard.press('Tab');
        if (await page.evaluate((n) => (document.activeElement as HTMLInputElement | null)?.value === n, name)) return;
      }
      assert.fail(`Tab never reached ${name}`);
    };
    await tabUntil('crm:member');
    await page.keyboard.press('Space');
    await tabUntil('analytics:viewer').catch(() => undefined);
    await page.keyboard.press('Enter');
    await page.getByRole('status').getByText('Added.').waitFor();
    assert.deepEqual(json<'User'>(await call('GET', `${API}/users/keys@example.com`)).apps, [{ name: 'crm', role: 'member' }]);
    await page.getByRole('button', { name: 'Deactivate' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Deactivate', 'focus returns to the button');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Reactivate' }).waitFor();
    assert.equal(json<'User'>(await call('GET', `${API}/users/keys@example.com`)).status, 'deactivated');
  });

  test('operator pages: workspaces (key shown once, typed deletion), keys, products with product_in_use explained, audit log', TEST_TIMEOUT, async () => {
    const page = await signedInAsOperator();
    await page.getByRole('row', { name: /acme/ }).waitFor();
    await assertAccessible(page, 'workspaces');

    await page.getByLabel('Subdomain').fill('beta');
    await page.getByLabel('Name (optional)').fill('Beta Ltd');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    const secret = page.getByLabel('API key of beta', { exact: true });
    await secret.waitFor();
    const key = await secret.inputValue();
    assert.match(key, /^wum_/);
    await page.getByRole('button', { name: 'Copy API key of beta' }).click();
    await page.getByText('Copied.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
    await assertAccessible(page, 'workspace created');
    if (SCREENSHOTS) await saveScreenshot(page, 'workspaces');
    const beta = await sendRequest(server.port, 'GET', `${API}/products`, { host: `beta.localhost:${server.port}`, headers: { 'x-api-key': key } });
    assert.equal(beta.status, 200, 'the key shown opens the new workspace');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await page.getByLabel('API key of beta', { exact: true }).count(), 0, 'the key is gone from the page');

    await page.getByLabel('Subdomain').fill('beta');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('alert').getByText('workspace_exists').waitFor();

    // Keys of a workspace: create one with a name, a scope and an expiry (shown once), revoke one, see when each was last used.
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'Workspace acme' }).waitFor();
    const keys = page.getByRole('region', { name: 'API keys' });
    // The heading shows before the keys arrive: wait for the table, then count its rows.
    await keys.locator('tbody tr').first().waitFor();
    assert.equal(await keys.locator('tbody tr').count(), 1);
    // The server records a key's use in the background (docs/api.md): give it a moment.
    let lastUsed = await keys.locator('tbody tr td').nth(4).innerText();
    for (let attempt = 0; lastUsed === 'Never' && attempt < 20; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await page.reload();
      await page.getByRole('heading', { name: 'Workspace acme' }).waitFor();
      lastUsed = await keys.locator('tbody tr td').nth(4).innerText();
    }
    assert.notEqual(lastUsed, 'Never', 'the key in use shows when it was last used');
    await page.getByRole('button', { name: 'Create an API key' }).click();
    await page.getByRole('button', { name: 'Create the key' }).click();
    await page.getByText('Name the key after what will use it').waitFor();
    await page.getByText('Pick at least one scope.').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('reader');
    await page.getByRole('checkbox', { name: /users:read/ }).check();
    await page.getByRole('button', { name: 'Create the key' }).click();
    const second = await page.getByLabel('New API key of acme', { exact: true }).inputValue();
    await keys.locator('tbody tr').nth(1).waitFor();
    await keys.getByRole('row', { name: /reader/ }).getByText('users:read', { exact: true }).waitFor();
    const outOfScope = await sendRequest(server.port, 'GET', `${API}/products`, { host: `${WORKSPACE}.localhost:${server.port}`, headers: { 'x-api-key': second } });
    assert.equal(outOfScope.status, 403, 'the new key carries only users:read');
    const inScope = await sendRequest(server.port, 'GET', `${API}/users`, { host: `${WORKSPACE}.localhost:${server.port}`, headers: { 'x-api-key': second } });
    assert.equal(inScope.status, 200);
    await assertAccessible(page, 'workspace keys');
    if (SCREENSHOTS) await saveScreenshot(page, 'workspace-keys');
    await keys.locator('tbody tr').nth(1).getByRole('button', { name: /^Revoke key/ }).click();
    await page.getByRole('dialog', { name: 'Revoke this API key?' }).getByRole('button', { name: 'Revoke the key' }).click();
    await keys.getByRole('cell', { name: /^Revoked/ }).waitFor();
    const revoked = await sendRequest(server.port, 'GET', `${API}/users`, { host: `${WORKSPACE}.localhost:${server.port}`, headers: { 'x-api-key': second } });
    assert.equal(revoked.status, 401);

    // Deleting a workspace takes its name typed out.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workspaces' }).click();
    await page.getByRole('button', { name: 'Delete beta' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete the workspace beta?' });
    const confirm = dialog.getByRole('button', { name: 'Delete the workspace' });
    assert.equal(await confirm.isDisabled(), true);
    await dialog.getByLabel('Type beta to confirm').fill('bet');
    assert.equal(await confirm.isDisabled(), true);
    await dialog.getByLabel('Type beta to confirm').fill('beta');
    await confirm.click();
    await page.getByRole('status').getByText('Deleted beta.').waitFor();
    assert.equal((await call('GET', '/admin/v1/workspaces/beta')).status, 404);

    // Products: edit roles; removing a role an active user holds is refused and explained.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Products' }).click();
    await page.getByRole('heading', { name: 'Products' }).waitFor();
    await assertAccessible(page, 'products');
    await page.getByRole('button', { name: 'Edit the roles of analytics' }).click();
    await page.getByLabel(/Roles of analytics/).fill('viewer, editor, owner');
    await page.getByRole('button', { name: 'Save roles' }).click();
    await page.getByRole('row', { name: /analytics/ }).getByText('owner').waitFor();
    assert.deepEqual(json<'getCatalogueProduct'>(await call('GET', '/admin/v1/products/analytics')).roles, ['viewer', 'editor', 'owner']);
    await page.getByRole('button', { name: 'Edit the roles of crm' }).click();
    await page.getByLabel(/Roles of crm/).fill('admin');
    await page.getByRole('button', { name: 'Save roles' }).click();
    await page.getByRole('alert').getByText('product_in_use').waitFor();
    await page.getByText('The catalogue never takes a role away from an active user').waitFor();
    if (SCREENSHOTS) await saveScreenshot(page, 'products');
    assert.deepEqual(json<'getCatalogueProduct'>(await call('GET', '/admin/v1/products/crm')).roles, ['admin', 'member'], 'nothing changed');

    // The audit log, filtered, with its filters in the URL.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    await page.getByLabel('Action').fill('workspace.deleted');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('Page 1 of 1 · 1 event').waitFor();
    assert.equal(new URL(page.url()).searchParams.get('action'), 'workspace.deleted');
    await page.getByRole('cell', { name: 'workspace beta' }).waitFor();
    await page.getByLabel('Action').fill('');
    await page.getByLabel('Workspace').fill(WORKSPACE);
    await page.getByLabel('Target').fill('ada@example.com');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('cell', { name: 'user.created' }).waitFor();
    await page.getByRole('cell', { name: /^wum_\S{8} \(api_key\)$/ }).first().waitFor();
    // Not while the filtered page loads: its rows are dimmed then, which fails axe's contrast check.
    await page.locator('table:not([aria-busy])').waitFor();
    await assertAccessible(page, 'audit log');
    if (SCREENSHOTS) await saveScreenshot(page, 'audit');
    // The actor filter sends the API's values ("Operator" is `operator`); every workspace has its column.
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByLabel('Actor type').selectOption({ label: 'Operator' });
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL((url) => url.searchParams.get('actor_type') === 'operator');
    await page.locator('table:not([aria-busy])').waitFor();
    await page.getByRole('columnheader', { name: 'Workspace' }).waitFor();
    await page.getByRole('row', { name: new RegExp(`${WORKSPACE} Workspace created workspace\\.created`) }).waitFor();
    assert.equal(await page.getByRole('cell', { name: /\(api_key\)$/ }).count(), 0, 'only the operator');
  });
  test('operator pages: an identity provider the server could not use is refused with the reason and not saved; a working one is', TEST_TIMEOUT, async () => {
    const op = await startOpenIdProvider([`${origin}/console/oidc/callback`]);
    try {
      const page = await signedInAsOperator();
      await page.goto(`http://localhost:${server.port}/console/workspaces/${WORKSPACE}`);
      const section = page.getByRole('region', { name: 'Identity provider' });
      await section.getByRole('button', { name: 'Set an identity provider' }).click();
      const form = section.getByRole('form', { name: 'Identity provider' });
      // Plain http off loopback: sign-in could never use it, so the save refuses it (no connection is made).
      await form.getByLabel('Issuer URL').fill('http://10.0.0.1/op');
      await form.getByLabel('Client ID').fill(op.clientId);
      await form.getByLabel('Client secret').fill(op.clientSecret);
      await form.getByRole('button', { name: 'Save' }).click();
      await form.getByRole('alert').getByText('identity_provider_http_refused').waitFor();
      assert.match(await form.getByRole('alert').innerText(), /only go to loopback/);
      assert.equal((await call('GET', `/admin/v1/workspaces/${WORKSPACE}/identity-provider`)).status, 404, 'nothing stored');

      await form.getByLabel('Issuer URL').fill(op.issuer);
      await form.getByRole('button', { name: 'Save' }).click();
      await section.getByText(op.issuer).waitFor();
      assert.equal(json<'getIdentityProvider'>(await call('GET', `/admin/v1/workspaces/${WORKSPACE}/identity-provider`)).issuer, op.issuer);
      // Back to the key sign-in the other tests of this file use.
      assert.equal((await call('DELETE', `/admin/v1/workspaces/${WORKSPACE}/identity-provider`)).status, 204);
    } finally {
      await op.close();
    }
  });

  test('operator pages: webhook endpoints (secret shown once, edit, rotate, delete) and their deliveries with redelivery', TEST_TIMEOUT, async () => {
    const page = await signedInAsOperator();
    await page.goto(`http://localhost:${server.port}/console/workspaces/${WORKSPACE}`);
    const section = page.getByRole('region', { name: 'Webhook endpoints' });
    await section.getByText('No webhook endpoints yet').waitFor();

    // A URL the service refuses: the API's reason beside the field, the request id in the notice.
    await section.getByRole('button', { name: 'Add a webhook endpoint' }).click();
    const form = section.getByRole('form', { name: 'Add a webhook endpoint' });
    await form.getByLabel('Endpoint URL').fill('ftp://hooks.example.com/wum');
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    await form.getByRole('alert').getByText('validation_failed').waitFor();
    assert.match(await form.getByRole('alert').innerText(), /Request id [0-9a-f-]{36}/);
    assert.equal(await form.getByLabel('Endpoint URL').getAttribute('aria-invalid'), 'true');
    await assertAccessible(page, 'webhook endpoint form with errors');

    await form.getByLabel('Endpoint URL').fill(receiver.url);
    await form.getByLabel('Description (optional)').fill('Seats');
    await form.getByLabel('user.created').check();
    await form.getByLabel('user.updated').check();
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    const secretField = page.getByLabel(`Signing secret of ${receiver.url}`, { exact: true });
    const secret = await secretField.inputValue();
    assert.match(secret, /^whsec_/);
    await page.getByRole('button', { name: `Copy Signing secret of ${receiver.url}` }).click();
    await page.getByText('Copied.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
    const row = section.getByRole('row', { name: new RegExp(receiver.url.replace(/[.]/g, '\\.')) });
    await row.getByText('Enabled').waitFor();
    assert.deepEqual(await row.locator('.chip').allInnerTexts(), ['user.created', 'user.updated']);
    await assertAccessible(page, 'webhook endpoint created');
    if (SCREENSHOTS) {
      await section.evaluate((element) => element.scrollIntoView({ block: 'start' }));
      await saveScreenshot(page, 'webhooks');
    }
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await page.getByLabel(`Signing secret of ${receiver.url}`, { exact: true }).count(), 0, 'the secret is gone from the page');
    await page.reload();
    await row.waitFor();
    assert.doesNotMatch(await page.locator('main').innerText(), /whsec_/, 'and never shown again');
    const listed = json<'listWebhookEndpoints'>(await call('GET', `/admin/v1/workspaces/${WORKSPACE}/webhook-endpoints`)).webhook_endpoints;
    assert.equal(listed.length, 1);
    const endpointId: string = listed[0]!.id;
    const endpointPath = `/admin/v1/workspaces/${WORKSPACE}/webhook-endpoints/${endpointId}`;

    // Edit: event types and enabled.
    await row.getByRole('button', { name: `Edit ${receiver.url}` }).click();
    const edit = section.getByRole('form', { name: 'Edit the webhook endpoint' });
    await edit.getByLabel('user.updated').uncheck();
    await edit.getByLabel('user.deactivated').check();
    await edit.getByLabel('Enabled (deliveries are sent)').uncheck();
    await edit.getByRole('button', { name: 'Save the endpoint' }).click();
    await row.getByText('Disabled').waitFor();
    const stored = json<'getWebhookEndpoint'>(await call('GET', endpointPath));
    assert.deepEqual({ event_types: stored.event_types, enabled: stored.enabled }, { event_types: ['user.created', 'user.deactivated'], enabled: false });
    await row.getByRole('button', { name: `Edit ${receiver.url}` }).click();
    await edit.getByLabel('Enabled (deliveries are sent)').check();
    await edit.getByRole('button', { name: 'Save the endpoint' }).click();
    await row.getByText('Enabled').waitFor();
    assert.equal(json<'getWebhookEndpoint'>(await call('GET', endpointPath)).enabled, true);

    // Rotate: cancel changes nothing; confirmed, a new secret is shown once.
    await row.getByRole('button', { name: `Rotate the secret of ${receiver.url}` }).click();
    const rotateDialog = page.getByRole('dialog', { name: /Rotate this endpoint/ });
    await assertAccessible(page, 'rotate confirmation');
    await rotateDialog.getByRole('button', { name: 'Cancel' }).click();
    await rotateDialog.waitFor({ state: 'hidden' });
    assert.equal(json<'getWebhookEndpoint'>(await call('GET', endpointPath)).previous_secret_expires_at, null, 'cancel rotates nothing');
    await row.getByRole('button', { name: `Rotate the secret of ${receiver.url}` }).click();
    await rotateDialog.getByRole('button', { name: 'Rotate the secret' }).click();
    const rotated = await page.getByLabel(`New signing secret of ${receiver.url}`, { exact: true }).inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    assert.notEqual(json<'getWebhookEndpoint'>(await call('GET', endpointPath)).previous_secret_expires_at, null);
    await page.getByRole('button', { name: 'I have copied it' }).click();

    // A user change is delivered (the receiver fails the first attempt); the deliveries page shows both attempts.
    receiver.respondWith(500, 204);
    await addUser('hooked@example.com');
    await receiver.waitFor(2);
    await row.getByRole('link', { name: `Deliveries of ${receiver.url}` }).click();
    await page.getByRole('heading', { name: `Deliveries to ${receiver.url}` }).waitFor();
    const deliveries = page.getByRole('region', { name: 'Deliveries' });
    const delivery = deliveries.getByRole('row', { name: /user\.created/ });
    await delivery.getByText('Succeeded').waitFor();
    const attempts = await delivery.locator('.attempts li').allInnerTexts();
    assert.equal(attempts.length, 2);
    assert.match(attempts[0]!, /: 500 \(\d+ ms\)$/);
    assert.match(attempts[1]!, /: 204 \(\d+ ms\)$/);
    assert.equal(await delivery.getByRole('cell').nth(1).innerText(), '204');
    await deliveries.getByText('Page 1 of 1 · 1 delivery').waitFor();
    await assertAccessible(page, 'webhook deliveries');

    // Redeliver after a confirmation: the same event (webhook-id) is sent again.
    const eventId = receiver.received[1]!.headers['webhook-id'];
    await delivery.getByRole('button', { name: /^Redeliver user\.created/ }).click();
    const redeliverDialog = page.getByRole('dialog', { name: 'Send this delivery again?' });
    await assertAccessible(page, 'redeliver confirmation');
    await redeliverDialog.getByRole('button', { name: 'Redeliver' }).click();
    await page.getByRole('status').getByText(`Event ${eventId} will be sent again now.`).waitFor();
    const [, , again] = await receiver.waitFor(3);
    assert.equal(again!.headers['webhook-id'], eventId);
    await delivery.getByText('Succeeded').waitFor();

    // Delete after a confirmation.
    await page.getByRole('link', { name: `← Workspace ${WORKSPACE}` }).click();
    await row.getByRole('button', { name: `Delete ${receiver.url}` }).click();
    await page.getByRole('dialog', { name: 'Delete this webhook endpoint?' }).getByRole('button', { name: 'Delete the endpoint' }).click();
    await section.getByRole('status').getByText(`Deleted the endpoint ${receiver.url}.`).waitFor();
    await section.getByText('No webhook endpoints yet').waitFor();
    assert.equal((await call('GET', endpointPath)).status, 404);
  });

  test('access that ends: an expiry date on the user form, "expires in N days", the 30-day filter, and the policy page', TEST_TIMEOUT, async () => {
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    await addUser('forever@example.com');
    const page = await signedIn('/console/users/new');
    await page.getByRole('heading', { name: 'Add a user' }).waitFor();
    await page.getByLabel('Email').fill('temp@example.com');
    // A day already over: the API's 422 shows beside the date.
    await page.getByLabel('Access ends').fill(day(-1));
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.locator('#new-expires-error').getByText('must be later than now').waitFor();
    assert.equal(await page.getByLabel('Access ends').getAttribute('aria-invalid'), 'true');
    assert.match(await page.getByRole('alert').innerText(), /expires_at_not_in_future/);
    assert.equal((await call('GET', `${API}/users/temp@example.com`)).status, 404, 'nothing stored');
    await page.getByLabel('Access ends').fill(day(10));
    await assertAccessible(page, 'add user with an expiry');
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.getByRole('status').getByText('Added.').waitFor();
    assert.equal(Date.parse(json<'User'>(await call('GET', `${API}/users/temp@example.com`)).expires_at!), Date.parse(`${day(10)}T23:59:59Z`), 'the end of that UTC day');
    await page.getByText('(expires in 10 days)').waitFor();

    // The list says when; the 30-day filter, kept in the URL, finds them and not a user who never expires.
    await page.getByRole('link', { name: '← All users' }).click();
    await page.getByLabel('Access ends').selectOption('30');
    await page.locator('tbody tr', { hasText: 'temp@example.com' }).getByText('expires in 10 days').waitFor();
    await page.getByText('Page 1 of 1 · 1 user').waitFor();
    assert.deepEqual(await page.locator('tbody th').allInnerTexts(), ['temp@example.com']);
    assert.equal(new URL(page.url()).searchParams.get('expiring'), '30');
    await assertAccessible(page, 'users expiring within 30 days');
    await page.goto(`${origin}/console/users?q=forever&expiring=30`);
    await page.getByText('No users match these filters.').waitFor();
    assert.equal(await page.getByLabel('Access ends').inputValue(), '30');
    await page.goto(`${origin}/console/users?q=forever`);
    await page.locator('tbody th', { hasText: 'forever@example.com' }).getByText('forever@example.com').waitFor();
    assert.equal(await page.locator('tbody tr', { hasText: 'forever@example.com' }).getByText('never').count(), 1);

    // Clearing the date on edit sends null.
    await page.goto(`${origin}/console/users/temp%40example.com`);
    await page.getByRole('heading', { name: 'Edit' }).waitFor();
    assert.equal(await page.getByLabel('Access ends').inputValue(), day(10));
    await page.getByLabel('Access ends').fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    assert.equal(json<'User'>(await call('GET', `${API}/users/temp@example.com`)).expires_at, null);

    // The policy page: set, the API's errors beside the field, remove.
    await page.getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('heading', { name: 'Access policies' }).waitFor();
    await page.getByText('No inactivity policy').waitFor();
    await page.getByLabel('Deactivate after').fill('P2D');
    await page.getByLabel('Warn before', { exact: true }).fill('P3D');
    await page.getByRole('button', { name: 'Set inactivity policy' }).click();
    await page.locator('#inactivity-warn-error').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /invalid_duration/);
    await page.getByLabel('Deactivate after').fill('P90D');
    await page.getByLabel('Warn before', { exact: true }).fill('P7D');
    await page.getByLabel('Everyone (never the last active owner)').check();
    await page.getByRole('button', { name: 'Set inactivity policy' }).click();
    await page.getByText('Users not seen for P90D are deactivated').waitFor();
    assert.deepEqual((await call('GET', `${API}/policies/inactivity`)).json(), { deactivate_after: 'P90D', applies_to: 'all', warn_before: 'P7D' });
    await page.getByLabel('Warn before (empty: no warning)').fill('P14D');
    await page.getByRole('button', { name: 'Save warning' }).click();
    await page.getByText('sent P14D before each user').waitFor();
    assert.deepEqual((await call('GET', `${API}/policies/expiry`)).json(), { warn_before: 'P14D' });
    await assertAccessible(page, 'policies');
    if (SCREENSHOTS) await saveScreenshot(page, 'policies');
    await page.getByRole('button', { name: 'Remove inactivity policy' }).click();
    await page.getByRole('dialog', { name: 'Remove the inactivity policy?' }).getByRole('button', { name: 'Remove' }).click();
    await page.getByText('No inactivity policy').waitFor();
    assert.equal((await call('GET', `${API}/policies/inactivity`)).status, 404);

    // A session without policies:write sees the policies, with the controls off and the reason.
    const readOnly = await call('POST', `/admin/v1/workspaces/${WORKSPACE}/api-keys`, { name: 'reader', scopes: ['users:read'] });
    assert.equal(readOnly.status, 201, readOnly.body);
    const reader = await open();
    await reader.goto(`${origin}/console/policies`);
    await reader.getByLabel('API key').fill(json<'createApiKey'>(readOnly).key);
    await reader.getByRole('button', { name: `Sign in to ${WORKSPACE}` }).click();
    await reader.getByText('You can see the policies but not change them').waitFor();
    await reader.getByText('sent P14D before each user').waitFor();
    assert.equal(await reader.getByRole('button', { name: 'Set inactivity policy' }).isDisabled(), true);
    assert.equal(await reader.getByLabel('Warn before (empty: no warning)').isDisabled(), true);
    await assertAccessible(reader, 'policies (read only)');
  });
});
