// one backend: pglite: sign-in through an OpenID Provider in a browser, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../harness/browser.ts';
import { buildConsole } from '../../scripts/build-console.ts';
import { assertRefusedPage, assertSessionCookie, sessionCookieOf, signInAtProvider, type BrowserSignIn } from '../helpers/oidc-browser.ts';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ConsoleSession } from '../helpers/json.ts';

const TEST_TIMEOUT = { timeout: 60_000 };

/*
 * The console's sign-in with a workspace's identity provider against a real OpenID Provider
 * (panva's oidc-provider on 127.0.0.1), driven in Chromium: who gets in, who is refused (with a
 * page saying why), the session cookie, CSRF, and the session's end on another replica.
 * Workspace hosts are `<subdomain>.localhost`, which Chromium resolves to loopback itself.
 */
describe(`console sign-in with an identity provider [${BACKEND}]`, () => {
  let ctx: TestContext;
  let port: number;
  let browser: Browser;
  let op: TestOpenIdProvider;
  let ws: TestWorkspace;
  let origin: string;

  const external = (method: 'GET' | 'POST' | 'DELETE', path: string, headers: Record<string, string>, body?: unknown, app = ctx.app) =>
    app.inject({ method, url: `${API}${path}`, headers: { host: ws.host, ...headers }, ...(body === undefined ? {} : { payload: body as object }) });

  async function addUser(email: string, role: 'owner' | 'non_owner'): Promise<void> {
    const res = await external('POST', '/users', { 'x-api-key': ws.apiKey }, userBody(email, { role }));
    assert.equal(res.statusCode, 201, res.body);
  }

  /** Starts the sign-in at the console (or its start URL) and logs in at the provider as `login`. */
  async function signInAs(login: string, throughTheConsole = false): Promise<BrowserSignIn> {
    return signInAtProvider(browser, op, {
      origin,
      callbackPath: '/console/oidc/callback',
      begin: async (page) => {
        if (!throughTheConsole) {
          await page.goto(`${origin}/console/oidc/start`, { waitUntil: 'domcontentloaded' });
          return;
        }
        await page.goto(`${origin}/console/`);
        // The page learns of the provider from its sign-in options; their link shows once it has.
        const signInWith = page.getByRole('link', { name: `Sign in with ${new URL(op.issuer).host}` });
        await signInWith.waitFor();
        assert.equal(await page.getByLabel('API key').count(), 0, 'no key sign-in once the workspace has a provider');
        await signInWith.click();
      },
    }, login);
  }

  const sessionCookie = (page: Page) => sessionCookieOf(page, origin);
  const assertRefused = (signIn: BrowserSignIn, reason: RegExp) => assertRefusedPage(signIn, origin, reason);

  before(async () => {
    await buildConsole({ ifStale: true });
    // The test provider is plain http on loopback, which the outbound guard allows only with WEBHOOK_ALLOW_HTTP.
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    await ctx.seedProducts();
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    port = (ctx.app.server.address() as AddressInfo).port;
    ws = await ctx.createWorkspace('oidc');
    origin = `http://${ws.subdomain}.localhost:${port}`;
    op = await startOpenIdProvider([`${origin}/console/oidc/callback`]);
    browser = await launchChromium();
    const set = await ctx.admin('PUT', `/workspaces/${ws.subdomain}/identity-provider`, {
      issuer: op.issuer,
      client_id: op.clientId,
      client_secret: op.clientSecret,
    });
    assert.equal(set.statusCode, 201, set.body);
    await addUser('olivia@example.com', 'owner');
    await addUser('oscar@example.com', 'owner');
    await addUser('nina@example.com', 'non_owner');
    op.accounts.set('olivia', { email: 'Olivia@example.com', email_verified: true });
    op.accounts.set('nina', { email: 'nina@example.com', email_verified: true });
    op.accounts.set('stranger', { email: 'stranger@example.com', email_verified: true });
    op.accounts.set('oscar-unverified', { email: 'oscar@example.com', email_verified: false });
    op.accounts.set('oscar', { email: 'oscar@example.com', email_verified: true });
  });
  after(async () => {
    await browser?.close();
    await op?.close();
    await ctx?.close();
  });

  test('an owner gets in: an HttpOnly SameSite=Lax session of the person; a cross-origin write is refused; a replayed state is refused', TEST_TIMEOUT, async () => {
    const { page, callbackUrl } = await signInAs('olivia', true);
    // Back in the console, signed in as the person, without typing anything else.
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    const header = { cookie: await assertSessionCookie(page, origin) };
    const session = await external('GET', '/console/session', header);
    assert.equal(session.statusCode, 200, session.body);
    assert.equal(json<ConsoleSession>(session).actor.type, 'person');
    assert.equal(json<ConsoleSession>(session).actor.label, 'olivia@example.com');
    const users = await external('GET', '/users', header);
    assert.equal(users.statusCode, 200, users.body);

    // The person's changes name the person.
    // inject's Host is the workspace host without the port: the console's own origin for this request.
    const added = await external('POST', '/users', { ...header, origin: `http://${ws.host}` }, userBody('made-by-olivia@example.com'));
    assert.equal(added.statusCode, 201, added.body);
    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?target_id=made-by-olivia@example.com`);
    assert.equal(json<'listWorkspaceAuditEvents'>(audit).audit_events[0]?.actor.type, 'person', audit.body);
    assert.equal(json<'listWorkspaceAuditEvents'>(audit).audit_events[0]?.actor.label, 'olivia@example.com');

    const crossOrigin = await external('POST', '/users', { ...header, origin: 'http://evil.localhost' }, userBody('forged@example.com'));
    assert.equal(crossOrigin.statusCode, 403, crossOrigin.body);
    assert.equal(json<'Problem'>(crossOrigin).code, 'cross_origin_refused');
    assert.equal((await external('GET', '/users/forged@example.com', header)).statusCode, 404, 'nothing added');

    // The same callback again (the code and state of a finished sign-in).
    const replay = await page.goto(callbackUrl);
    assert.equal(replay?.status(), 400);
    assert.match(await page.locator('#reason').innerText(), /already used or has expired/);
    await page.context().close();
  });

  test('a non-owner, an unknown email and an unverified email are refused with a page saying why', TEST_TIMEOUT, async () => {
    const nonOwner = await signInAs('nina');
    await assertRefused(nonOwner, /nina@example\.com is not an active owner/);
    const unknown = await signInAs('stranger');
    await assertRefused(unknown, /stranger@example\.com is not an active owner/);
    const unverified = await signInAs('oscar-unverified');
    await assertRefused(unverified, /has not verified oscar@example\.com/);
  });

  test('a verified email that only folds onto an owner\'s (Kelvin sign, U+0130, fullwidth) is refused and binds nothing', TEST_TIMEOUT, async () => {
    await addUser('kate@example.com', 'owner');
    await addUser('iris@example.com', 'owner');
    const lookalikes = { 'kelvin-kate': '\u212Aate@example.com', 'dotted-iris': '\u0130ris@example.com', 'fullwidth-kate': '\uFF2BATE@example.com' };
    for (const [login, email] of Object.entries(lookalikes)) {
      op.accounts.set(login, { email, email_verified: true });
      await assertRefused(await signInAs(login), /is not an ASCII email address/);
    }
    // Nothing was bound to the lookalikes' accounts: the owners' own accounts get in.
    op.accounts.set('kate', { email: 'KATE@example.com', email_verified: true });
    op.accounts.set('iris', { email: 'iris@example.com', email_verified: true });
    for (const login of ['kate', 'iris']) {
      const { page, status } = await signInAs(login);
      assert.equal(status, 303, `${login} gets in`);
      await page.context().close();
    }
  });

  test('an ID token for another audience, or tampered with, is refused', TEST_TIMEOUT, async () => {
    try {
      op.rewriteIdToken = async (idToken, sign) => {
        const claims = json<Record<string, unknown>>(Buffer.from(idToken.split('.')[1]!, 'base64url').toString());
        return sign({ ...claims, aud: 'another-client' });
      };
      const wrongAudience = await signInAs('olivia');
      await assertRefused(wrongAudience, /could not be verified/);

      op.rewriteIdToken = async (idToken) => {
        const [head, payload, signature] = idToken.split('.');
        const claims = json<Record<string, unknown>>(Buffer.from(payload!, 'base64url').toString());
        const forged = Buffer.from(JSON.stringify({ ...claims, email: 'oscar@example.com' })).toString('base64url');
        return `${head}.${forged}.${signature}`;
      };
      const tampered = await signInAs('nina');
      await assertRefused(tampered, /could not be verified/);
    } finally {
      op.rewriteIdToken = undefined;
    }
  });

  test('deactivating the owner ends the session on another replica within 1 s; so does a new provider configuration', TEST_TIMEOUT, async () => {
    const replica = await ctx.buildApp();
    const { page } = await signInAs('oscar');
    const header = { cookie: `wum_session=${(await sessionCookie(page))!.value}` };
    assert.equal((await external('GET', '/users', header, undefined, replica)).statusCode, 200);
    assert.equal((await external('DELETE', '/users/oscar@example.com', { 'x-api-key': ws.apiKey })).statusCode, 204);
    const deadline = Date.now() + 1_000;
    let status = 200;
    while (Date.now() < deadline && status === 200) {
      status = (await external('GET', '/users', header, undefined, replica)).statusCode;
      if (status === 200) await sleep(20);
    }
    assert.equal(status, 401, 'refused within 1 s');
    await page.context().close();

    const again = await signInAs('olivia');
    const olivia = { cookie: `wum_session=${(await sessionCookie(again.page))!.value}` };
    assert.equal((await external('GET', '/users', olivia, undefined, replica)).statusCode, 200);
    const changed = await ctx.admin('PUT', `/workspaces/${ws.subdomain}/identity-provider`, {
      issuer: op.issuer,
      client_id: op.clientId,
      client_secret: op.clientSecret,
    });
    assert.equal(changed.statusCode, 200);
    assert.equal((await external('GET', '/users', olivia, undefined, replica)).statusCode, 401, 'a new configuration ends the session');
    await again.page.context().close();
  });

  test('the provider account is bound at the first sign-in: another account with the email is refused; another provider binds afresh', TEST_TIMEOUT, async () => {
    // olivia signed in above as the provider account "olivia".
    op.accounts.set('olivia-again', { email: 'olivia@example.com', email_verified: true });
    await assertRefused(await signInAs('olivia-again'), /olivia@example\.com signed in before as another account/);

    // The workspace moves to another provider, where olivia's account has another `sub`.
    const first = op;
    const second = await startOpenIdProvider([`${origin}/console/oidc/callback`]);
    try {
      second.accounts.set('olivia-at-the-new-provider', { email: 'olivia@example.com', email_verified: true });
      const moved = await ctx.admin('PUT', `/workspaces/${ws.subdomain}/identity-provider`, {
        issuer: second.issuer,
        client_id: second.clientId,
        client_secret: second.clientSecret,
      });
      assert.equal(moved.statusCode, 200, moved.body);
      op = second;
      const { page, status } = await signInAs('olivia-at-the-new-provider');
      assert.equal(status, 303, 'the owner gets in at the new provider');
      const session = await external('GET', '/console/session', { cookie: `wum_session=${(await sessionCookie(page))!.value}` });
      assert.equal(session.statusCode, 200, session.body);
      assert.equal(json<ConsoleSession>(session).actor.label, 'olivia@example.com');
      await page.context().close();
      // Bound at the new provider now: the same email there under another account is refused.
      second.accounts.set('olivia-twin', { email: 'olivia@example.com', email_verified: true });
      await assertRefused(await signInAs('olivia-twin'), /signed in before as another account/);
    } finally {
      op = first;
      await second.close();
    }
  });
});
