// one backend: pglite: sign-in through an OpenID Provider, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { assertAccessible, launchChromium } from '../../harness/browser.ts';
import { freePort } from '../../harness/free-port.ts';
import { buildConsole } from '../../scripts/build-console.ts';
import { buildApp } from '../../src/http/app.ts';
import { storageDependencies } from '../../src/server/app-dependencies.ts';
import { assertRefusedPage, sessionCookieOf, signInAtProvider, type BrowserSignIn } from '../helpers/oidc-browser.ts';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { API, BACKEND, createTestContext, testConfig, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const TEST_TIMEOUT = { timeout: 90_000 };
const CALLBACK = '/console/oidc/callback';
const OPERATOR_CALLBACK = '/console/operator/oidc/callback';

/** A line of the server log (pino JSON). */
interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly reqId?: string;
  readonly reason?: string;
  readonly workspace?: string;
  readonly status?: number;
  readonly providerError?: string;
}

/*
 * Both console sign-ins against oidc-provider as it comes (`conformIdTokenClaims` at its
 * default: the `email` scope's claims only in the UserInfo response, OpenID Connect Core §5.4)
 * and with the email in the ID token; the UserInfo `sub` check; and every refusal: a page styled
 * like the console with the request id and a "Sign in with another account" link, and one log
 * line with the reason code and the workspace, never the email (docs/security.md, "Sign-in
 * refusals"). Driven in Chromium like the other sign-in tests; the app logs to a captured stream.
 */
describe(`sign-in with the standard OpenID Connect claims, and its refusals [${BACKEND}]`, () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let browser: Browser;
  let port: number;
  /** oidc-provider at its defaults: the email in UserInfo only. */
  let standard: TestOpenIdProvider;
  /** oidc-provider with `conformIdTokenClaims: false`: the email in the ID token too. */
  let inToken: TestOpenIdProvider;
  let ws: TestWorkspace;
  let wsInToken: TestWorkspace;
  let log = '';

  const origin = (workspace: TestWorkspace) => `http://${workspace.subdomain}.localhost:${port}`;
  const operatorOrigin = () => `http://localhost:${port}`;
  const logLines = () => log.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as LogLine);
  const refusalLine = (requestId: string) => logLines().find((line) => line.msg === 'sign-in refused' && line.reqId === requestId);

  /** Signs in at `workspace`'s start URL through `op` as `login`. */
  const signInAs = (op: TestOpenIdProvider, workspace: TestWorkspace, login: string): Promise<BrowserSignIn> =>
    signInAtProvider(browser, op, {
      origin: origin(workspace),
      callbackPath: CALLBACK,
      begin: async (page) => void (await page.goto(`${origin(workspace)}/console/oidc/start`, { waitUntil: 'domcontentloaded' })),
    }, login);

  /** The person or operator a session cookie of `signIn` opens, read back from the server. */
  async function sessionLabel(signIn: BrowserSignIn, at: string, path: string): Promise<string> {
    const cookie = await sessionCookieOf(signIn.page, at);
    assert.ok(cookie, 'a session cookie');
    const res = await app.inject({ method: 'GET', url: path, headers: { host: new URL(at).host, cookie: `wum_session=${cookie.value}` } });
    assert.equal(res.statusCode, 200, res.body);
    return json<{ actor: { label: string } }>(res).actor.label;
  }

  before(async () => {
    await buildConsole({ ifStale: true });
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    await ctx.seedProducts();
    port = await freePort();
    ws = await ctx.createWorkspace('claims');
    wsInToken = await ctx.createWorkspace('idtoken');
    standard = await startOpenIdProvider([`${origin(ws)}${CALLBACK}`, `${operatorOrigin()}${OPERATOR_CALLBACK}`], { conformIdTokenClaims: true });
    inToken = await startOpenIdProvider([`${origin(wsInToken)}${CALLBACK}`], { conformIdTokenClaims: false });
    const config = testConfig({
      // The test providers are plain http on loopback, which the outbound guard allows only with this.
      WEBHOOK_ALLOW_HTTP: 'true',
      LOG_LEVEL: 'info',
      OPERATOR_OIDC_ISSUER: standard.issuer,
      OPERATOR_OIDC_CLIENT_ID: standard.clientId,
      OPERATOR_OIDC_CLIENT_SECRET: standard.clientSecret,
      OPERATOR_EMAILS: 'ada@example.com',
    });
    const stream = new Writable({
      write(chunk, _encoding, done) {
        log += String(chunk);
        done();
      },
    });
    app = await buildApp(config, { ...storageDependencies(config, ctx.database, ctx.store), logger: { level: 'info', stream } });
    await app.listen({ host: '127.0.0.1', port });
    for (const [workspace, op] of [[ws, standard], [wsInToken, inToken]] as const) {
      const set = await ctx.admin('PUT', `/workspaces/${workspace.subdomain}/identity-provider`, { issuer: op.issuer, client_id: op.clientId, client_secret: op.clientSecret });
      assert.equal(set.statusCode, 201, set.body);
      const owner = await ctx.api(workspace, 'POST', '/users', { body: userBody('olivia@example.com', { role: 'owner' }) });
      assert.equal(owner.statusCode, 201, owner.body);
      op.accounts.set('olivia', { email: 'olivia@example.com', email_verified: true });
    }
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('nina@example.com') })).statusCode, 201);
    standard.accounts.set('nina', { email: 'nina@example.com', email_verified: true });
    standard.accounts.set('oscar-unverified', { email: 'olivia@example.com', email_verified: false });
    standard.accounts.set('ada', { email: 'ada@example.com', email_verified: true });
    browser = await launchChromium();
  });
  after(async () => {
    for (const close of [() => browser?.close(), () => app?.close(), () => standard?.close(), () => inToken?.close(), () => ctx?.close()]) await close();
  });

  test('at oidc-provider\'s defaults the email comes from UserInfo: an owner and an operator get in', TEST_TIMEOUT, async () => {
    const asked = standard.userInfoRequests;
    const owner = await signInAs(standard, ws, 'olivia');
    assert.equal(owner.status, 303, 'the owner gets in');
    assert.equal(await sessionLabel(owner, origin(ws), `${API}/console/session`), 'olivia@example.com');
    await owner.page.context().close();

    const operator = await signInAtProvider(browser, standard, {
      origin: operatorOrigin(),
      callbackPath: OPERATOR_CALLBACK,
      begin: async (page) => void (await page.goto(`${operatorOrigin()}/console/operator/oidc/start`, { waitUntil: 'domcontentloaded' })),
    }, 'ada');
    assert.equal(operator.status, 303, 'the operator gets in');
    assert.equal(await sessionLabel(operator, operatorOrigin(), '/console/operator/session'), 'ada@example.com');
    await operator.page.context().close();
    assert.equal(standard.userInfoRequests, asked + 2, 'each sign-in asked UserInfo for the email');
  });

  test('with the email in the ID token (conformIdTokenClaims: false) the owner gets in without asking UserInfo', TEST_TIMEOUT, async () => {
    const owner = await signInAs(inToken, wsInToken, 'olivia');
    assert.equal(owner.status, 303);
    assert.equal(await sessionLabel(owner, origin(wsInToken), `${API}/console/session`), 'olivia@example.com');
    await owner.page.context().close();
    assert.equal(inToken.userInfoRequests, 0);
  });

  test('claims from UserInfo decide: a non-owner and an unverified email are refused, logged with the reason and the workspace, never the email', TEST_TIMEOUT, async () => {
    for (const [login, reason, message] of [
      ['nina', 'not_owner', /nina@example\.com is not an active owner/],
      ['oscar-unverified', 'email_unverified', /has not verified olivia@example\.com/],
    ] as const) {
      const refused = await signInAs(standard, ws, login);
      const requestId = await refused.page.locator('#request-id').innerText();
      await assertRefusedPage(refused, origin(ws), message);
      assert.deepEqual({ ...refusalLine(requestId), time: undefined, pid: undefined, hostname: undefined }, {
        level: 30,
        msg: 'sign-in refused',
        reqId: requestId,
        reason,
        status: 403,
        workspace: ws.subdomain,
        time: undefined,
        pid: undefined,
        hostname: undefined,
      });
    }
    assert.doesNotMatch(log, /nina@|olivia@/, 'no email in the log');
  });

  test('a UserInfo response about another subject than the ID token\'s is refused (userinfo_subject_mismatch)', TEST_TIMEOUT, async () => {
    standard.rewriteUserInfo = (claims) => ({ ...claims, sub: 'someone-else' });
    try {
      const refused = await signInAs(standard, ws, 'olivia');
      const requestId = await refused.page.locator('#request-id').innerText();
      await assertRefusedPage(refused, origin(ws), /described another account than the one that signed in/);
      const line = refusalLine(requestId);
      assert.equal(line?.reason, 'userinfo_subject_mismatch');
      assert.equal(line?.level, 40, 'a warning: the provider answered about someone else');
    } finally {
      standard.rewriteUserInfo = undefined;
    }
  });

  test('the refusal page looks like the console, is accessible, and "Sign in with another account" asks the provider to log in again', TEST_TIMEOUT, async () => {
    const refused = await signInAs(standard, ws, 'nina');
    const { page } = refused;
    assert.equal(refused.status, 403);
    // The console's styles apply (the page's CSP admits its own style by hash, nothing else).
    assert.equal(await page.locator('.card').evaluate((card) => getComputedStyle(card).borderRadius), '8px');
    assert.match(await page.locator('body').evaluate((body) => getComputedStyle(body).fontFamily), /system-ui/);
    await assertAccessible(page, 'the sign-in refusal page');
    const another = page.getByRole('link', { name: 'Sign in with another account' });
    assert.equal(await another.getAttribute('href'), '/console/oidc/start?prompt=select_account');
    // oidc-provider lists no prompt_values_supported: select_account falls back to login.
    const authorization = page.waitForRequest((request) => request.url().startsWith(`${standard.issuer}/auth`));
    await another.click();
    assert.equal(new URL((await authorization).url()).searchParams.get('prompt'), 'login');
    await page.waitForURL((url) => url.href.startsWith(standard.issuer));
    await page.locator('input[name=login]').fill('olivia');
    await page.locator('input[name=password]').fill('any');
    await Promise.all([page.waitForURL((url) => url.origin === origin(ws) && url.pathname === '/console/'), page.locator('button[type=submit]').click()]);
    assert.ok(await sessionCookieOf(page, origin(ws)), 'signed in as the other account');
    await page.context().close();
  });

  test('every refusal of the flow is a page with the request id, and a log line with its reason code', async () => {
    const page = (host: string, url: string, requestId: string) => app.inject({ method: 'GET', url, headers: { host, 'x-request-id': requestId } });
    const workspaceHost = new URL(origin(ws)).host;
    const cases = [
      { host: workspaceHost, url: `${CALLBACK}?state=never-issued`, status: 400, reason: 'state_invalid', workspace: ws.subdomain, another: '/console/oidc/start?prompt=select_account' },
      { host: workspaceHost, url: `${CALLBACK}?error=access_denied&state=x`, status: 403, reason: 'provider_error', workspace: ws.subdomain, another: '/console/oidc/start?prompt=select_account' },
      { host: `localhost:${port}`, url: `${OPERATOR_CALLBACK}?state=never-issued`, status: 400, reason: 'state_invalid', workspace: undefined, another: '/console/operator/oidc/start?prompt=select_account' },
      { host: `nowhere-${process.pid}.localhost:${port}`, url: '/console/oidc/start', status: 404, reason: 'workspace_not_found', workspace: `nowhere-${process.pid}`, another: undefined },
    ];
    for (const [i, expected] of cases.entries()) {
      const requestId = `refusal-${i}`;
      const res = await page(expected.host, expected.url, requestId);
      assert.equal(res.statusCode, expected.status, res.body);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.equal(res.headers['x-request-id'], requestId);
      assert.match(res.body, new RegExp(`<code id="request-id">${requestId}</code>`));
      assert.match(String(res.headers['content-security-policy']), /^default-src 'none'; style-src 'sha256-[^']+'; /);
      if (expected.another) assert.match(res.body, new RegExp(`<a [^>]*href="${expected.another.replace('?', '\\?')}">Sign in with another account</a>`));
      else assert.doesNotMatch(res.body, /another account/, 'nothing to sign in with here');
      const line = refusalLine(requestId);
      assert.equal(line?.reason, expected.reason, JSON.stringify(line));
      assert.equal(line?.workspace, expected.workspace);
      assert.equal(line?.status, expected.status);
    }
    assert.equal(refusalLine('refusal-1')?.providerError, 'access_denied');
  });

  test('the sign-in start takes prompt=select_account or login, and refuses any other value with a problem', async () => {
    const start = (query: string) => app.inject({ method: 'GET', url: `/console/oidc/start${query}`, headers: { host: new URL(origin(ws)).host } });
    for (const [query, prompt] of [['', null], ['?prompt=login', 'login'], ['?prompt=select_account', 'login']] as const) {
      const res = await start(query);
      assert.equal(res.statusCode, 302, res.body);
      assert.equal(new URL(String(res.headers.location)).searchParams.get('prompt'), prompt, query);
    }
    const bad = await start('?prompt=consent');
    assert.equal(bad.statusCode, 400, bad.body);
    assert.equal(json<'Problem'>(bad).code, 'invalid_parameter');
  });
});
