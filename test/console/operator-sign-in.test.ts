// one backend: pglite: sign-in through an OpenID Provider in a browser, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../harness/browser.ts';
import { freePort } from '../../harness/free-port.ts';
import { buildConsole } from '../../scripts/build-console.ts';
import { assertRefusedPage, assertSessionCookie, sessionCookieOf, signInAtProvider, type BrowserSignIn } from '../helpers/oidc-browser.ts';
import { startOpenIdProvider, type TestAccount, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { API, BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const TEST_TIMEOUT = { timeout: 90_000 };
const CALLBACK = '/console/operator/oidc/callback';

/*
 * Operators signing in to the console with the operator identity provider of the configuration
 * (OPERATOR_OIDC_*, OPERATOR_EMAILS) against a real OpenID Provider (oidc-provider on
 * 127.0.0.1), in Chromium: who gets in (listed, verified emails only), what their session opens
 * (the admin API, never a workspace's API) and what it records (their email in the audit trail),
 * where it is offered (the operator host only, and only when configured), sign-out, and the end
 * of the session when the email leaves the list. The operator host is `localhost:<port>`.
 */
describe(`console sign-in of operators with an identity provider [${BACKEND}]`, () => {
  let ctx: TestContext;
  let op: TestOpenIdProvider;
  let browser: Browser;
  let app: FastifyInstance;
  let port: number;
  let origin: string;
  let env: Record<string, string>;
  let ws: TestWorkspace;

  /** An admin-API request with a session cookie, on the operator host unless `host` says otherwise. */
  const admin = (method: 'GET' | 'POST', path: string, cookie: string, headers: Record<string, string> = {}, body?: unknown, on = app) =>
    on.inject({
      method,
      url: `/admin/v1${path}`,
      headers: { host: `localhost:${port}`, cookie, ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });

  /** Starts the operator sign-in (through the console's sign-in page, or at its start URL) and logs in as `login`. */
  function signInAs(login: string, throughTheConsole = false): Promise<BrowserSignIn> {
    return signInAtProvider(
      browser,
      op,
      {
        origin,
        callbackPath: CALLBACK,
        begin: async (page) => {
          if (!throughTheConsole) {
            await page.goto(`${origin}/console/operator/oidc/start`, { waitUntil: 'domcontentloaded' });
            return;
          }
          await page.goto(`${origin}/console/`);
          const signInWith = page.getByRole('link', { name: `Sign in with ${new URL(op.issuer).host}` });
          await signInWith.waitFor();
          assert.equal(await page.getByLabel('Operator token').count(), 1, 'the token sign-in stays beside it');
          await signInWith.click();
        },
      },
      login,
    );
  }

  const cookieHeader = async (page: Page) => `wum_session=${(await sessionCookieOf(page, origin))!.value}`;
  const assertRefused = (signIn: BrowserSignIn, reason: RegExp) => assertRefusedPage(signIn, origin, reason);

  before(async () => {
    await buildConsole({ ifStale: true });
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('opsign');
    port = await freePort();
    origin = `http://localhost:${port}`;
    op = await startOpenIdProvider([`${origin}${CALLBACK}`]);
    env = {
      OPERATOR_OIDC_ISSUER: op.issuer,
      OPERATOR_OIDC_CLIENT_ID: op.clientId,
      OPERATOR_OIDC_CLIENT_SECRET: op.clientSecret,
      OPERATOR_EMAILS: ' Ada@Example.com , grace@example.com, kate@example.com',
      // The test provider is plain http on loopback, which the outbound guard allows only with this.
      WEBHOOK_ALLOW_HTTP: 'true',
    };
    app = await ctx.buildApp(env);
    await app.listen({ host: '127.0.0.1', port });
    browser = await launchChromium();
    const accounts: Record<string, TestAccount> = {
      ada: { email: 'ada@example.com', email_verified: true },
      grace: { email: 'GRACE@example.com', email_verified: true },
      mallory: { email: 'mallory@example.com', email_verified: true },
      'ada-unverified': { email: 'ada@example.com', email_verified: false },
    };
    for (const [login, account] of Object.entries(accounts)) op.accounts.set(login, account);
  });
  after(async () => {
    for (const close of [() => browser?.close(), () => op?.close(), () => ctx?.close()]) await close();
  });

  test('a listed operator signs in from the console, creates a workspace named in the audit trail by their email, and signs out', TEST_TIMEOUT, async () => {
    const { page } = await signInAs('ada', true);
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
    const header = await assertSessionCookie(page, origin);

    await page.getByLabel('Subdomain').fill('made-by-ada');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByLabel('API key of made-by-ada', { exact: true }).waitFor();
    const audit = await ctx.admin('GET', '/workspaces/made-by-ada/audit-events');
    const created = json<'listWorkspaceAuditEvents'>(audit).audit_events.find((e: { action: string }) => e.action === 'workspace.created');
    assert.deepEqual(created?.actor, { type: 'operator', id: 'oidc:ada', label: 'ada@example.com' }, audit.body);
    const keys = await ctx.admin('GET', '/workspaces/made-by-ada/api-keys');
    assert.equal(json<'listApiKeys'>(keys).api_keys[0]?.created_by?.label, 'ada@example.com', keys.body);
    const signedIn = await ctx.admin('GET', '/audit-events?action=console.signed_in&actor_type=operator');
    assert.ok(json<'listAuditEvents'>(signedIn).audit_events.some((e: { actor: { label: string | null } }) => e.actor.label === 'ada@example.com'), signedIn.body);

    // A write with the cookie from another origin is refused, and changes nothing.
    const forged = await admin('POST', '/workspaces', header, { origin: 'http://evil.localhost' }, { subdomain: 'forged-by-evil' });
    assert.equal(forged.statusCode, 403, forged.body);
    assert.equal(json<'Problem'>(forged).code, 'cross_origin_refused');
    assert.equal((await ctx.admin('GET', '/workspaces/forged-by-evil')).statusCode, 404, 'nothing created');
    // An operator session opens no workspace's API.
    const external = await app.inject({ method: 'GET', url: `${API}/users`, headers: { host: `${ws.subdomain}.localhost:${port}`, cookie: header } });
    assert.equal(external.statusCode, 401, external.body);
    assert.equal(json<'Problem'>(external).code, 'invalid_session');

    const signedOut = page.waitForResponse((r) => r.url().endsWith('/console/operator/session') && r.request().method() === 'DELETE');
    await page.getByRole('button', { name: 'Sign out' }).click();
    assert.equal((await signedOut).status(), 204);
    await page.getByRole('link', { name: `Sign in with ${new URL(op.issuer).host}` }).waitFor();
    const after = await admin('GET', '/workspaces', header);
    assert.equal(after.statusCode, 401, 'the session ended at sign-out');
    assert.equal(json<'Problem'>(after).code, 'invalid_session');
    assert.equal(await sessionCookieOf(page, origin), undefined, 'the cookie is cleared');
    await page.context().close();
  });

  test('an unlisted email, an unverified email, a tampered state and a replayed callback are refused with a page saying why', TEST_TIMEOUT, async () => {
    await assertRefused(await signInAs('mallory'), /mallory@example\.com is not one of this server's operators/);
    await assertRefused(await signInAs('ada-unverified'), /has not verified ada@example\.com/);
    // Emails that fold onto listed ones only under Unicode rules are other mailboxes: refused, nothing bound.
    for (const [login, email] of [['kelvin-kate', '\u212Aate@example.com'], ['fullwidth-grace', '\uFF27race@example.com']] as const) {
      op.accounts.set(login, { email, email_verified: true });
      await assertRefused(await signInAs(login), /is not an ASCII email address/);
    }

    const grace = await signInAs('grace');
    assert.equal(grace.status, 303, 'a listed email, compared case-insensitively, gets in');
    // Another account at the provider with grace's email (recreated, or the address reassigned).
    op.accounts.set('grace-again', { email: 'grace@example.com', email_verified: true });
    await assertRefused(await signInAs('grace-again'), /grace@example\.com signed in before as another account/);
    const replay = await grace.page.goto(grace.callbackUrl);
    assert.equal(replay?.status(), 400);
    assert.match(await grace.page.locator('#reason').innerText(), /already used or has expired/);
    await grace.page.context().close();

    // A callback whose state was changed on the way, in the browser that started a sign-in.
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/console/operator/oidc/start`, { waitUntil: 'domcontentloaded' });
    assert.ok(page.url().startsWith(op.issuer), 'at the provider');
    const tampered = await page.goto(`${origin}${CALLBACK}?code=a-code&state=not-the-state-it-was-given`);
    assert.equal(tampered?.status(), 400);
    assert.match(await page.locator('#reason').innerText(), /already used or has expired/);
    assert.equal(await sessionCookieOf(page, origin), undefined, 'no session cookie');
    await context.close();
  });

  test('not offered on a workspace host, nor without the settings: the console shows no link, the routes answer 404', TEST_TIMEOUT, async () => {
    const workspaceHost = { host: `${ws.subdomain}.localhost:${port}` };
    for (const path of ['/console/operator/options', '/console/operator/oidc/start', CALLBACK, '/console/operator/session']) {
      const onWorkspace = await app.inject({ method: 'GET', url: path, headers: workspaceHost });
      assert.equal(onWorkspace.statusCode, 404, `${path} on a workspace host: ${onWorkspace.body}`);
      const unconfigured = await ctx.app.inject({ method: 'GET', url: path, headers: { host: `localhost:${port}` } });
      assert.equal(unconfigured.statusCode, 404, `${path} without the settings: ${unconfigured.body}`);
      assert.equal(json<'Problem'>(unconfigured).code, 'not_found');
    }
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`http://${ws.subdomain}.localhost:${port}/console/`);
    await page.getByLabel('API key').waitFor();
    assert.equal(await page.getByRole('link', { name: /^Sign in with/ }).count(), 0, 'no operator sign-in on a workspace host');
    await context.close();
  });

  test('a workspace session gets 401 on the admin API; an operator removed from OPERATOR_EMAILS is signed out at the next request', TEST_TIMEOUT, async () => {
    const keySession = await app.inject({
      method: 'POST',
      url: `${API}/console/session`,
      headers: { host: `${ws.subdomain}.localhost:${port}`, 'x-api-key': ws.apiKey, origin: `http://${ws.subdomain}.localhost:${port}` },
    });
    assert.equal(keySession.statusCode, 201, keySession.body);
    const workspaceCookie = (keySession.headers['set-cookie'] as string).split(';', 1)[0]!;
    const refused: LightMyRequestResponse = await admin('GET', '/workspaces', workspaceCookie);
    assert.equal(refused.statusCode, 401, refused.body);
    assert.equal(json<'Problem'>(refused).code, 'invalid_session');

    const { page } = await signInAs('grace');
    const header = await cookieHeader(page);
    assert.equal((await admin('GET', '/workspaces', header)).statusCode, 200);
    const restarted = await ctx.buildApp({ ...env, OPERATOR_EMAILS: 'ada@example.com' });
    const gone = await admin('GET', '/workspaces', header, {}, undefined, restarted);
    assert.equal(gone.statusCode, 401, gone.body);
    assert.equal(json<'Problem'>(gone).code, 'invalid_session');
    await page.context().close();
  });
});
