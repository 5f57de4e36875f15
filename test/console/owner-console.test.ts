// one backend: postgres: the owner's console in Chromium, over the HTTP API the per-backend files cover (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible, launchChromium, openPage, saveScreenshot, type WatchedPage } from '../../harness/browser.ts';
import { freePort } from '../../harness/free-port.ts';
import { buildConsole } from '../../scripts/build-console.ts';
import { signInAtProvider } from '../helpers/oidc-browser.ts';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { startJsonLinesReceiver, type StreamReceiver } from '../../harness/stream-receivers.ts';
import { startTestStreamWorker, type TestStreamWorker } from '../helpers/stream-worker.ts';
import { json } from '../helpers/json.ts';

const TEST_TIMEOUT = { timeout: 120_000 };
/** Screenshots of the owner's pages go to docs/console/ when asked (`npm run screenshots`). */
const SCREENSHOTS = process.env.WUM_SCREENSHOTS === '1';

/*
 * The console for a workspace's owner, driven in Chromium against the real app: an owner signs
 * in through the workspace's identity provider (panva's oidc-provider on 127.0.0.1), runs the
 * workspace alone (a SCIM key, a webhook endpoint, the audit trail), and sees only what the
 * session's scopes allow; streams the audit trail to a JSON Lines receiver on 127.0.0.1 (its
 * health, pause and resume; the operator's streams of one workspace or of every one); a
 * read-only key's session sees no write control; a new tab opens
 * signed in; the operator's sign-in card is on the operator host only, once. Workspace hosts
 * are `<subdomain>.localhost`, which Chromium resolves to loopback itself. See docs/console.md,
 * "Owners' self-service".
 */
describe(`console for a workspace's owner [${BACKEND}]`, () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let port: number;
  let browser: Browser;
  let op: TestOpenIdProvider;
  let receiver: WebhookReceiver;
  let streamReceiver: StreamReceiver;
  let worker: TestStreamWorker | undefined;
  let ws: TestWorkspace;
  let origin: string;
  let opened: WatchedPage[] = [];

  /** The workspace API as a script would call it, with the workspace's first key. */
  const external = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    app.inject({ method, url: `${API}${path}`, headers: { host: ws.host, 'x-api-key': ws.apiKey }, ...(body === undefined ? {} : { payload: body as object }) });

  /** A fresh watched page; its problems are checked when the test ends. */
  async function open(): Promise<Page> {
    const watched = await openPage(browser);
    opened.push(watched);
    return watched.page;
  }

  /** Signs in as the owner `olivia` through the console's "Sign in with …" and the provider. */
  async function signInAsOwner(): Promise<Page> {
    const { page } = await signInAtProvider(
      browser,
      op,
      {
        origin,
        callbackPath: '/console/oidc/callback',
        begin: async (start) => {
          await start.goto(`${origin}/console/`);
          await start.getByRole('link', { name: `Sign in with ${new URL(op.issuer).host}` }).click();
        },
      },
      'olivia',
    );
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    return page;
  }

  /** A fresh watched page on the operator host, signed in with the operator token. */
  async function signInAsOperator(): Promise<Page> {
    const page = await open();
    await page.goto(`http://localhost:${port}/console/`);
    await page.getByLabel('Operator token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in as operator' }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
    return page;
  }

  /** The main navigation's link `name`. */
  const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

  before(async () => {
    await buildConsole({ ifStale: true });
    // The test provider and the webhook receiver are plain http on loopback, allowed only with WEBHOOK_ALLOW_HTTP.
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('owner');
    port = await freePort();
    origin = `http://${ws.subdomain}.localhost:${port}`;
    [op, receiver, streamReceiver, browser] = await Promise.all([
      // oidc-provider at its defaults: the email claims come from UserInfo only (OpenID Connect Core §5.4).
      startOpenIdProvider([`${origin}/console/oidc/callback`, `http://localhost:${port}/console/operator/oidc/callback`], { conformIdTokenClaims: true }),
      startWebhookReceiver(),
      startJsonLinesReceiver(),
      launchChromium(),
    ]);
    app = await ctx.buildApp({
      WEBHOOK_ALLOW_HTTP: 'true',
      // A key still signs in to a workspace that has an identity provider (the read-only key's session below).
      CONSOLE_KEY_SIGN_IN: 'always',
      OPERATOR_OIDC_ISSUER: op.issuer,
      OPERATOR_OIDC_CLIENT_ID: op.clientId,
      OPERATOR_OIDC_CLIENT_SECRET: op.clientSecret,
      OPERATOR_EMAILS: 'ada@example.com',
    });
    await app.listen({ host: '127.0.0.1', port });
    const set = await ctx.admin('PUT', `/workspaces/${ws.subdomain}/identity-provider`, { issuer: op.issuer, client_id: op.clientId, client_secret: op.clientSecret });
    assert.equal(set.statusCode, 201, set.body);
    for (const [email, role] of [['olivia@example.com', 'owner'], ['nina@example.com', 'non_owner']] as const) {
      const added = await external('POST', '/users', userBody(email, { role }));
      assert.equal(added.statusCode, 201, added.body);
    }
    op.accounts.set('olivia', { email: 'olivia@example.com', email_verified: true });
  });

  after(async () => {
    const closing = [() => worker?.stop(), () => browser?.close(), () => op?.close(), () => receiver?.close(), () => streamReceiver?.close(), () => app?.close(), () => ctx?.close()];
    for (const close of closing) await close();
  });

  test.afterEach(async () => {
    const problems = opened.flatMap((watched) => watched.problems);
    await Promise.all(opened.map((watched) => watched.context.close()));
    opened = [];
    assert.deepEqual(problems, [], 'console errors, page errors or CSP violations');
  });

  test('an owner signs in with the identity provider, creates a scim key, sets a webhook endpoint and reads the audit trail by person', TEST_TIMEOUT, async () => {
    const page = await signInAsOwner();
    // Who is signed in, in the page's header: the person's email and their scopes.
    const header = page.getByRole('banner');
    await header.getByText(/Signed in as olivia@example\.com \(owner\)/).waitFor();
    // An owner may do everything: no control is off for want of a scope.
    assert.equal(await page.getByText('not available').count(), 0);
    for (const name of ['Users', 'Import', 'Policies', 'Settings', 'Audit trail', 'Audit streams']) await nav(page, name).waitFor();
    await page.getByRole('link', { name: 'Add user' }).waitFor();

    // A SCIM key for the company's identity provider: no scope preselected, the key shown once.
    await nav(page, 'Settings').click();
    await page.getByRole('heading', { name: `Settings of ${ws.subdomain}` }).waitFor();
    await page.getByRole('button', { name: 'Create an API key' }).click();
    const form = page.getByRole('form', { name: 'Create an API key' });
    assert.equal(await form.getByRole('checkbox', { checked: true }).count(), 0, 'no scope preselected');
    assert.equal(await form.getByRole('checkbox', { disabled: true }).count(), 0, 'an owner may give every scope');
    await form.getByLabel('Name', { exact: true }).fill('okta-scim');
    await form.getByRole('checkbox', { name: /^scim —/ }).check();
    await form.getByRole('button', { name: 'Create the key' }).click();
    const plaintext = await page.getByLabel(`New API key of ${ws.subdomain}`, { exact: true }).inputValue();
    assert.match(plaintext, /^wum_/);
    if (SCREENSHOTS) await saveScreenshot(page, 'owner-keys');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    const keys = page.getByRole('region', { name: 'API keys' });
    await keys.getByRole('row', { name: /okta-scim/ }).getByText('scim', { exact: true }).waitFor();
    const listed = json<'listApiKeys'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`)).api_keys.find((k: { name: string }) => k.name === 'okta-scim');
    assert.deepEqual(listed?.scopes, ['scim']);
    assert.equal(listed?.created_by?.label, 'olivia@example.com', 'made by the owner, in person');

    // The identity provider, with the redirect URI to register.
    await page.getByRole('region', { name: 'Identity provider' }).getByText(`${origin}/console/oidc/callback`).waitFor();

    // A webhook endpoint on a local receiver: its signing secret shown once.
    const webhooks = page.getByRole('region', { name: 'Webhook endpoints' });
    await webhooks.getByRole('button', { name: 'Add a webhook endpoint' }).click();
    const endpointForm = webhooks.getByRole('form', { name: 'Add a webhook endpoint' });
    await endpointForm.getByLabel('Endpoint URL').fill(receiver.url);
    await endpointForm.getByLabel('user.created').check();
    await endpointForm.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match(await page.getByLabel(`Signing secret of ${receiver.url}`, { exact: true }).inputValue(), /^whsec_/);
    await webhooks.getByRole('row', { name: new RegExp(receiver.url.replace(/[.]/g, '\\.')) }).getByText('Enabled').waitFor();
    await assertAccessible(page, "owner's settings");
    if (SCREENSHOTS) await saveScreenshot(page, 'owner-settings');
    const endpoints = await ctx.admin('GET', `/workspaces/${ws.subdomain}/webhook-endpoints`);
    assert.deepEqual(json<'listWebhookEndpoints'>(endpoints).webhook_endpoints.map((e: { url: string }) => e.url), [receiver.url]);

    // The audit trail, newest first, filtered to what people did.
    await nav(page, 'Audit trail').click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByLabel('Actor type').selectOption('person');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL((url) => url.searchParams.get('actor_type') === 'person');
    await page.locator('table:not([aria-busy])').waitFor();
    const rows = page.getByRole('table').getByRole('row');
    await rows.nth(1).getByRole('cell', { name: /olivia@example\.com \(person\)/ }).waitFor();
    assert.match(await rows.nth(1).innerText(), /Webhook endpoint created/, 'newest first');
    await page.getByRole('row', { name: /API key created api_key\.created/ }).waitFor();
    assert.equal(await page.getByRole('cell', { name: /\(api_key\)$/ }).count(), 0, 'only people');
    await page.getByRole('button', { name: 'Show oldest first' }).click();
    await page.waitForURL((url) => url.searchParams.get('order') === 'oldest');
    await page.getByRole('button', { name: 'Show newest first' }).waitFor();
    // The re-sorted page, not the busy one (its rows dimmed while it loads fail axe's contrast check).
    await page.waitForFunction(() => {
      const table = document.querySelector('table');
      return table !== null && !table.hasAttribute('aria-busy') && !/Webhook endpoint created/.test(table.querySelector('tbody tr')?.textContent ?? '');
    });
    await assertAccessible(page, 'audit trail');
    if (SCREENSHOTS) await saveScreenshot(page, 'owner-audit');
    assert.equal(await page.getByText('not available').count(), 0, 'nothing off for an owner');

    // A new tab, or a shared link, opens signed in from the session cookie.
    const again = await page.context().newPage();
    await again.goto(`${origin}/console/settings`);
    await again.getByRole('heading', { name: `Settings of ${ws.subdomain}` }).waitFor();
    await again.getByRole('banner').getByText(/olivia@example\.com/).waitFor();
    assert.equal(await again.getByRole('link', { name: /Sign in with/ }).count(), 0, 'no sign-in page');
    await page.context().close();
  });

  test('an owner streams the audit trail to a receiver on 127.0.0.1: the secret once, the health, pause and resume, test, replay, delete', TEST_TIMEOUT, async () => {
    // The server's worker, as every process runs it, on this test's database.
    worker = startTestStreamWorker(ctx, { timeoutMs: 2000, pauseAfterMs: 86_400_000 });
    const received = (email: string) => streamReceiver.rows().some((r) => r.action === 'user.created' && r.target_id === email);
    const until = async (what: string, done: () => boolean) => {
      const deadline = Date.now() + 30_000;
      while (!done()) {
        assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };

    const page = await signInAsOwner();
    await nav(page, 'Audit streams').click();
    await page.getByRole('heading', { name: 'Audit streams', level: 1 }).waitFor();
    await page.getByText(/No audit streams yet/).waitFor();
    await page.getByRole('button', { name: 'Add an audit stream' }).click();
    const form = page.getByRole('form', { name: 'Add an audit stream' });
    await form.getByLabel('Name', { exact: true }).fill('SIEM');
    await form.getByLabel('Destination', { exact: true }).selectOption('https');
    await form.getByLabel('Destination URL').fill(streamReceiver.url);
    await form.getByRole('button', { name: 'Add stream' }).click();
    assert.match(await page.getByLabel('Signing secret of SIEM', { exact: true }).inputValue(), /^whsec_/);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    const row = page.getByRole('row', { name: /SIEM/ });
    await row.getByText('Active', { exact: true }).waitFor();

    // A change arrives at the receiver; the health says so: no lag, a last delivery.
    assert.equal((await external('POST', '/users', userBody('streamed@example.com'))).statusCode, 201);
    await until('the streamed row', () => received('streamed@example.com'));
    await row.getByRole('cell', { name: 'None', exact: true }).waitFor();
    await row.getByRole('cell', { name: /\d{4}, \d\d:\d\d/ }).waitFor();
    await page.getByRole('button', { name: 'Send a test row to SIEM' }).click();
    await page.getByText('SIEM accepted the test row.').waitFor();
    assert.ok(streamReceiver.rows().some((r) => r.action === 'audit_stream.test'));

    // Paused: the badge, the explanation, and a change waiting as lag instead of being sent.
    await page.getByRole('button', { name: 'Pause SIEM' }).click();
    await row.getByText('Paused', { exact: true }).waitFor();
    await page.getByRole('note').getByText(/sends nothing, but it keeps its place/).waitFor();
    const listed = await external('GET', '/audit-streams');
    assert.equal(json<'listOwnAuditStreams'>(listed).audit_streams[0]?.status, 'paused', listed.body);
    assert.equal((await external('POST', '/users', userBody('while-paused@example.com'))).statusCode, 201);
    await row.getByRole('cell', { name: /rows?, oldest/ }).waitFor();
    assert.equal(received('while-paused@example.com'), false, 'nothing sent while paused');
    await assertAccessible(page, 'audit streams, one paused');
    if (SCREENSHOTS) await saveScreenshot(page, 'owner-audit-streams');

    // Resumed: what was written meanwhile arrives, and the lag is gone.
    await page.getByRole('button', { name: 'Resume SIEM' }).click();
    await row.getByText('Active', { exact: true }).waitFor();
    await until('the row written while paused', () => received('while-paused@example.com'));
    await row.getByRole('cell', { name: 'None', exact: true }).waitFor();
    assert.equal(await page.getByRole('note').count(), 0, 'no paused stream to explain');

    // Replay from today: the rows are sent again.
    const before = streamReceiver.rows().filter((r) => r.target_id === 'streamed@example.com').length;
    await page.getByRole('button', { name: 'Replay SIEM' }).click();
    await page.getByLabel('Replay from').fill(new Date().toISOString().slice(0, 10));
    await page.getByRole('button', { name: 'Send again from this day' }).click();
    await page.getByText(/SIEM sends again from \d{4}-\d\d-\d\d/).waitFor();
    await until('the replayed row', () => streamReceiver.rows().filter((r) => r.target_id === 'streamed@example.com').length > before);

    await page.getByRole('button', { name: 'Delete SIEM' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete the stream' }).click();
    await page.getByText('Deleted the stream SIEM.').waitFor();
    assert.deepEqual(json<'listOwnAuditStreams'>(await external('GET', '/audit-streams')).audit_streams, []);
    await page.context().close();
  });

  test('a users:read key sees the users and no control it may not use', TEST_TIMEOUT, async () => {
    const made = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, { name: 'reader', scopes: ['users:read'] });
    assert.equal(made.statusCode, 201, made.body);
    const page = await open();
    await page.goto(`${origin}/console/`);
    await page.getByLabel('API key').fill(json<'createApiKey'>(made).key);
    await page.getByRole('button', { name: `Sign in to ${ws.subdomain}` }).click();
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    await page.getByRole('banner').getByText(/Signed in as reader .*\(API key\).*users:read/).waitFor();
    await page.getByText(/Adding, importing, changing and deactivating users: not available\. This session lacks the users:write scope/).waitFor();
    await page.getByRole('link', { name: 'nina@example.com' }).waitFor();
    for (const name of ['Add user', 'Import CSV']) assert.equal(await page.getByRole('link', { name }).count(), 0, `no ${name}`);
    assert.equal(await page.getByRole('checkbox').count(), 0, 'no row selection (no bulk deactivation)');
    for (const name of ['Import', 'Settings', 'Audit trail', 'Audit streams']) assert.equal(await nav(page, name).count(), 0, `no ${name} in the navigation`);
    await nav(page, 'Policies').waitFor();
    if (SCREENSHOTS) await saveScreenshot(page, 'users-read-only');

    await page.getByRole('link', { name: 'nina@example.com' }).click();
    await page.getByRole('heading', { name: 'nina@example.com' }).waitFor();
    await page.getByText(/Changing, deactivating and reactivating this user: not available/).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Deactivate' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Save changes' }).count(), 0);

    // Typed addresses say why, rather than offering a form the API would refuse.
    const typed = [
      ['/console/users/new', 'Adding users'],
      ['/console/import', 'Importing users'],
      ['/console/settings', 'Webhook endpoints'],
      ['/console/trail', 'The audit trail'],
      ['/console/streams', 'Audit streams'],
    ] as const;
    for (const [path, what] of typed) {
      await page.goto(`${origin}${path}`);
      await page.getByText(new RegExp(`${what}: not available\\. This session lacks`)).waitFor();
    }
    await assertAccessible(page, 'read-only user page');
  });

  test("the operator reaches a workspace's policies from its page and sets them through the operator API", TEST_TIMEOUT, async () => {
    const page = await signInAsOperator();
    await page.getByRole('banner').getByText('Signed in as Operator (token)').waitFor();
    await page.goto(`http://localhost:${port}/console/workspaces/${ws.subdomain}`);
    await page.getByRole('link', { name: `Policies of ${ws.subdomain}` }).click();
    await page.getByRole('heading', { name: `Access policies of ${ws.subdomain}` }).waitFor();
    await page.getByText('No inactivity policy').waitFor();
    await page.getByLabel('Deactivate after').fill('P90D');
    await page.getByRole('button', { name: 'Set inactivity policy' }).click();
    await page.getByRole('button', { name: 'Save inactivity policy' }).waitFor();
    const stored = await app.inject({ method: 'GET', url: `${API}/policies/inactivity`, headers: { host: ws.host, 'x-api-key': ws.apiKey } });
    assert.equal(json<'getInactivityPolicy'>(stored).deactivate_after, 'P90D', stored.body);
    await assertAccessible(page, "the operator's policies of a workspace");
  });

  test("the operator's Audit streams: a stream of one workspace or of every one, its health, pause, delete", TEST_TIMEOUT, async () => {
    const page = await signInAsOperator();
    await nav(page, 'Audit streams').click();
    await page.getByRole('heading', { name: 'Audit streams', level: 1 }).waitFor();
    for (const [name, workspace] of [['Everything', ''], ['Owner only', ws.subdomain]] as const) {
      await page.getByRole('button', { name: 'Add an audit stream' }).click();
      const form = page.getByRole('form', { name: 'Add an audit stream' });
      await form.getByLabel('Workspace (empty: every workspace)').fill(workspace);
      await form.getByLabel('Name', { exact: true }).fill(name);
      await form.getByLabel('Destination URL').fill(streamReceiver.url);
      await form.getByRole('button', { name: 'Add stream' }).click();
      assert.match(await page.getByLabel(`Signing secret of ${name}`, { exact: true }).inputValue(), /^whsec_/);
      await page.getByRole('button', { name: 'I have copied it' }).click();
    }
    const everything = page.getByRole('row', { name: /Everything/ });
    await everything.getByRole('cell', { name: 'Every workspace', exact: true }).waitFor();
    await page.getByRole('row', { name: /Owner only/ }).getByRole('cell', { name: ws.subdomain, exact: true }).waitFor();
    await everything.getByText('Active', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Pause Everything' }).click();
    await everything.getByText('Paused', { exact: true }).waitFor();
    await assertAccessible(page, "the operator's audit streams");
    // The owner sees their workspace's stream only.
    assert.deepEqual(json<'listOwnAuditStreams'>(await external('GET', '/audit-streams')).audit_streams.map((s) => s.name), ['Owner only']);
    for (const name of ['Everything', 'Owner only']) {
      await page.getByRole('button', { name: `Delete ${name}` }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete the stream' }).click();
      await page.getByText(`Deleted the stream ${name}.`).waitFor();
    }
    await page.getByText(/No audit streams yet/).waitFor();
  });

  test('the operator card is on the operator host only, once, with both ways to sign in', TEST_TIMEOUT, async () => {
    const page = await open();
    await page.goto(`http://localhost:${port}/console/`);
    await page.getByRole('link', { name: `Sign in with ${new URL(op.issuer).host}` }).waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Operator', exact: true }).count(), 1, 'one operator card');
    assert.equal(await page.getByLabel('Operator token').count(), 1);
    if (SCREENSHOTS) await saveScreenshot(page, 'operator-sign-in');

    await page.goto(`${origin}/console/`);
    await page.getByRole('heading', { name: `Workspace “${ws.subdomain}”` }).first().waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Operator', exact: true }).count(), 0, 'no operator card on a workspace host');
    assert.equal(await page.getByLabel('Operator token').count(), 0);
    await page.goto(`${origin}/console/workspaces`);
    await page.getByText(/operator’s pages are on the server’s own address/).waitFor();
  });
});
