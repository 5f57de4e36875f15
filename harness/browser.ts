import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumHeadlessShell } from './debian-programs.ts';
import { REPO_ROOT } from './server-process.ts';

/** Where the tests save the screenshots the documentation shows. */
export const SCREENSHOT_DIR = join(REPO_ROOT, 'docs', 'console');

/**
 * Flags for a headless Chromium on a machine without a network: no sandbox (root in a
 * container), no GPU, and none of the background traffic (updates, sync, QUIC probes) that
 * would only time out. Playwright gives each launch a fresh, temporary profile directory.
 */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Starts Debian's Chromium headless shell (installed with apt-get when missing and running as
 * root) through playwright-core: what Playwright itself runs for headless tests. The web
 * console's file took 52 s and 44 s of CPU with the full browser, 44 s and 36 s with the shell
 * (docs/performance.md, "npm test").
 */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumHeadlessShell(), headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/** A page in a fresh context (light, 1280×800) that records what the console must never cause. */
export interface WatchedPage {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Console errors, uncaught exceptions and CSP violations seen so far. */
  readonly problems: string[];
}

/**
 * Opens a new context and page: 1280×800, light colour scheme, clipboard allowed; every
 * console error, page error and Content-Security-Policy violation is recorded in `problems`.
 */
export async function openPage(browser: Browser): Promise<WatchedPage> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    colorScheme: 'light',
    locale: 'en-GB',
    timezoneId: 'UTC',
    acceptDownloads: true,
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on('console', (message) => {
    // A failed API call the test provokes (404, 409, 412, 422) is logged by the browser as a resource error.
    if (message.type() === 'error' && !/Failed to load resource: the server responded with a status of (4\d\d)/.test(message.text())) {
      problems.push(`console: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`);
    });
  });
  return { context, page, problems };
}

/**
 * Runs axe-core on the page and fails on any serious or critical violation, naming each with
 * the elements it found (WCAG 2.2 A/AA rules and axe's best practices). Only violations are
 * collected in full (axe's `resultTypes`): gathering the passes, which nothing reads, took
 * about a third of Chromium's time in axe.
 */
export async function assertAccessible(page: Page, where: string): Promise<void> {
  const { violations } = await new AxeBuilder({ page }).options({ resultTypes: ['violations'] }).analyze();
  const severe = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    severe.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
    `accessibility violations on ${where}`,
  );
}

/** Saves a screenshot of the viewport as docs/console/<name>.png. */
export async function saveScreenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`) });
}
