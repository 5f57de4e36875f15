import assert from 'node:assert/strict';
import type { Browser, Cookie, Page } from 'playwright-core';
import type { TestOpenIdProvider } from './oidc-provider.ts';

/** Where a browser sign-in ended: the page, the callback URL the provider sent it to, and its status. */
export interface BrowserSignIn {
  readonly page: Page;
  readonly callbackUrl: string;
  readonly status: number | undefined;
}

/** How {@link signInAtProvider} starts the sign-in and recognises its callback. */
export interface SignInStart {
  /** The console's origin, e.g. `http://acme.localhost:3000`. */
  readonly origin: string;
  /** A path of the callback URL (to note its response). */
  readonly callbackPath: string;
  /** Opens the page at the server and leaves it on its way to the provider. */
  readonly begin: (page: Page) => Promise<void>;
}

/**
 * Starts a sign-in in a fresh browser context and logs in at the test provider as `login` (its
 * development login page: the login is the `sub`, any password). Resolves once the browser is
 * back at `origin`, with the callback's URL and status noted on the way.
 */
export async function signInAtProvider(browser: Browser, op: TestOpenIdProvider, start: SignInStart, login: string): Promise<BrowserSignIn> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  let callbackUrl = '';
  let status: number | undefined;
  page.on('response', (response) => {
    if (response.url().includes(start.callbackPath)) {
      callbackUrl = response.url();
      status = response.status();
    }
  });
  await start.begin(page);
  if (!page.url().startsWith(op.issuer)) await page.waitForURL((url) => url.href.startsWith(op.issuer), { waitUntil: 'domcontentloaded' });
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any');
  await Promise.all([page.waitForURL((url) => url.href.startsWith(start.origin), { waitUntil: 'domcontentloaded' }), page.locator('button[type=submit]').click()]);
  await page.waitForLoadState('domcontentloaded');
  assert.ok(callbackUrl, 'the provider sent the browser back to the callback');
  return { page, callbackUrl, status };
}

/** The plain-http session cookie (`wum_session`) a page's context holds for `origin`, if any. */
export async function sessionCookieOf(page: Page, origin: string): Promise<Cookie | undefined> {
  return (await page.context().cookies(origin)).find((c) => c.name === 'wum_session');
}

/** Asserts a refusal page (4xx, "Sign-in refused", the reason) and no session cookie, then closes the context. */
export async function assertRefusedPage(signIn: BrowserSignIn, origin: string, reason: RegExp): Promise<void> {
  const { page, status } = signIn;
  assert.equal(status !== undefined && status >= 400 && status < 500, true, `a 4xx page, got ${status}`);
  assert.match(await page.title(), /Sign-in refused/);
  assert.match(await page.locator('#reason').innerText(), reason);
  assert.equal(await sessionCookieOf(page, origin), undefined, 'no session cookie');
  await page.context().close();
}

/**
 * Asserts the session cookie a sign-in left for `origin` over plain http: `HttpOnly`,
 * `SameSite=Lax`, `Path=/`, not `Secure` (loopback http), and the sign-in's state cookie gone.
 * Returns the cookie as a `Cookie` request header.
 */
export async function assertSessionCookie(page: Page, origin: string): Promise<string> {
  const cookie = await sessionCookieOf(page, origin);
  assert.ok(cookie, 'a session cookie');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Lax');
  assert.equal(cookie.path, '/');
  assert.equal(cookie.secure, false, 'plain http on loopback: not Secure');
  assert.equal((await page.context().cookies(origin)).some((c) => c.name === 'wum_oidc_state'), false, 'the state cookie is gone');
  return `wum_session=${cookie.value}`;
}
