/*
 * `npm run bench:console`: the web console's budgets (docs/console.md), measured in Debian's headless
 * Chromium against a real server on a throw-away PostgreSQL whose workspace `big` holds
 * 1,000,000 users (seeded set-based, bench/seed.ts):
 *
 * - JavaScript shipped, gzipped (the .gz files the server sends): budget 150 KB;
 * - the users page interactive after sign-in: from the click on "Sign in" to the first page of
 *   users on screen with its exact total (the table filled, the controls enabled): budget 1 s;
 * - search: from the last keystroke in the search box to the matching rows on screen: budget
 *   300 ms.
 *
 * Each timing is taken RUNS times (after a warm-up) in a fresh browser context and reported as
 * median and maximum. Prints a Markdown table; exits non-zero when a budget is missed.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { buildConsole } from '../scripts/build-console.ts';
import { launchChromium, openPage } from '../harness/browser.ts';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { SERVER_ARGS, REPO_ROOT, sendRequest, spawnServer } from '../harness/server-process.ts';
import { seedProducts, seedWorkspaces, vacuumAnalyze, withSeedingClient } from './seed.ts';
import { buildBundles } from '../scripts/build-bundles.ts';
import { watchMachineLoad } from './machine-load.ts';

// The server runs as `npm start` runs it: bundled, once the bundle is current.
// Read before building, which loads the machine itself.
const load = watchMachineLoad();
await buildBundles({ ifStale: true });

const USERS = 1_000_000;
const RUNS = 7;
const BUDGET = { jsKb: 150, interactiveMs: 1000, searchMs: 300 };

/** Median and maximum of `samples`. */
function summary(samples: number[]): { median: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, max: sorted[sorted.length - 1]! };
}

/** The gzipped size of the console's JavaScript, in KB (1,000 bytes), as served. */
function gzippedJsKb(): number {
  const assets = join(REPO_ROOT, 'console', 'dist', 'assets');
  const bytes = readdirSync(assets)
    .filter((f) => f.endsWith('.js.gz'))
    .reduce((sum, f) => sum + statSync(join(assets, f)).size, 0);
  return bytes / 1000;
}

/**
 * Arms a watch in the page: resolves `window.__wumDone` with `performance.now()` at the first
 * DOM change after which `done()` holds, and records in `window.__wumStart` the time of the
 * next `event` (a trusted click or keydown). Timing inside the page keeps the driver's polling
 * and round trips out of the figures.
 */
async function armWatch(page: import('playwright-core').Page, event: 'click' | 'keydown', firstRow: string, total: string): Promise<void> {
  await page.evaluate(
    ({ event, firstRow, total }) => {
      const w = window as unknown as { __wumStart?: number; __wumDone?: Promise<number> };
      delete w.__wumStart;
      document.addEventListener(event, () => (w.__wumStart ??= performance.now()), { capture: true, once: true });
      // No named inner functions: tsx would wrap them in a helper the page does not have.
      w.__wumDone = new Promise((resolve) => {
        new MutationObserver((_records, observer) => {
          const row = document.querySelector('tbody th')?.textContent;
          const status = document.querySelector('.pager-status')?.textContent ?? '';
          if (row === firstRow && status.includes(total)) {
            observer.disconnect();
            resolve(performance.now());
          }
        }).observe(document.body, { subtree: true, childList: true, characterData: true });
      });
    },
    { event, firstRow, total },
  );
}

/** The time from the armed event to the watched state, in ms. */
async function watched(page: import('playwright-core').Page): Promise<number> {
  return page.evaluate(async () => {
    const w = window as unknown as { __wumStart: number; __wumDone: Promise<number> };
    return (await w.__wumDone) - w.__wumStart;
  });
}

const ALL = `· ${USERS.toLocaleString('en')} users`;

/** Click on "Sign in" → the first page of users and its total on screen, in ms. */
async function signInToUsers(browser: Browser, origin: string, apiKey: string): Promise<number> {
  const { page, context, problems } = await openPage(browser);
  try {
    await page.goto(`${origin}/console/`);
    await page.getByLabel('API key').fill(apiKey);
    await armWatch(page, 'click', 'u1@big.example', ALL);
    await page.getByRole('button', { name: /^Sign in to/ }).click();
    const time = await watched(page);
    if (problems.length > 0) throw new Error(problems.join('\n'));
    return time;
  } finally {
    await context.close();
  }
}

/** Last keystroke of `prefix` in the search box → its matching rows on screen, in ms (page already signed in). */
async function searchTimes(browser: Browser, origin: string, apiKey: string, prefixes: readonly string[]): Promise<number[]> {
  const { page, context } = await openPage(browser);
  try {
    await page.goto(`${origin}/console/`);
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: /^Sign in to/ }).click();
    await page.getByText(ALL).waitFor({ timeout: 30_000 });
    const times: number[] = [];
    for (const prefix of prefixes) {
      const box = page.getByLabel('Search');
      await box.fill('');
      await page.getByText(ALL).waitFor({ timeout: 30_000 });
      await box.pressSequentially(prefix.slice(0, -1), { delay: 40 });
      await armWatch(page, 'keydown', `${prefix}@big.example`, '· 11 users');
      await box.press(prefix.slice(-1));
      times.push(await watched(page));
    }
    return times;
  } finally {
    await context.close();
  }
}

const cluster = await startPostgresCluster();
if (!cluster) throw new Error('npm run bench:console needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
let stopServer = () => {};
try {
  process.stdout.write(`seeding ${USERS.toLocaleString('en')} users…\n`);
  const big = await withSeedingClient(cluster.url, async (run) => {
    await seedProducts(run);
    const [workspace] = await seedWorkspaces(run, ['big'], USERS);
    await vacuumAnalyze(run);
    return workspace!;
  });
  await buildConsole({ ifStale: true });
  const port = await freePort();
  const server = spawnServer(process.execPath, SERVER_ARGS, {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: cluster.url,
    LOG_LEVEL: 'warn',
  });
  stopServer = () => server.kill();
  for (let i = 0; ; i += 1) {
    if ((await sendRequest(port, 'GET', '/readyz').catch(() => undefined))?.status === 200) break;
    if (i > 300) throw new Error(`the server did not start:\n${server.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const origin = `http://big.localhost:${port}`;
  const browser = await launchChromium();
  try {
    await signInToUsers(browser, origin, big.apiKey); // warm-up: server caches, browser binary
    const interactive: number[] = [];
    for (let i = 0; i < RUNS; i += 1) interactive.push(await signInToUsers(browser, origin, big.apiKey));
    const prefixes = Array.from({ length: RUNS }, (_, i) => `u${12345 + i * 1111}`);
    await searchTimes(browser, origin, big.apiKey, ['u99999']); // warm-up
    const search = await searchTimes(browser, origin, big.apiKey, prefixes);
    // The API's own share of a search: the same request from Node, no browser.
    const api: number[] = [];
    for (const prefix of prefixes) {
      const started = performance.now();
      const answer = await sendRequest(port, 'GET', `/api/external/v2/users?q=${prefix}&page_size=30`, {
        host: `big.localhost:${port}`,
        headers: { 'x-api-key': big.apiKey },
      });
      if (answer.status !== 200) throw new Error(answer.body);
      api.push(performance.now() - started);
    }
    const a = summary(api);
    const js = gzippedJsKb();
    const i = summary(interactive);
    const s = summary(search);
    const rows = [
      ['JavaScript, gzipped', `${js.toFixed(1)} KB`, '—', `≤ ${BUDGET.jsKb} KB`, js <= BUDGET.jsKb],
      [`users page interactive after sign-in (${USERS.toLocaleString('en')} users)`, `${i.median.toFixed(0)} ms`, `${i.max.toFixed(0)} ms`, `≤ ${BUDGET.interactiveMs} ms`, i.max <= BUDGET.interactiveMs],
      ['search results after the last keystroke', `${s.median.toFixed(0)} ms`, `${s.max.toFixed(0)} ms`, `≤ ${BUDGET.searchMs} ms`, s.max <= BUDGET.searchMs],
    ] as const;
    const apiRow = `| of which the API's answer (GET /users?q=…, from Node) | ${a.median.toFixed(0)} ms | ${a.max.toFixed(0)} ms | — | — |\n`;
    process.stdout.write(`\nweb console budgets, ${RUNS} runs each, Chromium ${browser.version()}\n\n`);
    process.stdout.write('| measure | median | max | budget | met |\n| --- | --- | --- | --- | --- |\n');
    for (const [label, median, max, budget, met] of rows) process.stdout.write(`| ${label} | ${median} | ${max} | ${budget} | ${load.verdict(met)} |\n`);
    process.stdout.write(apiRow);
    process.stdout.write(`\n${load.summary()}\n`);
    if (rows.some((row) => !row[4])) process.exitCode = 1;
  } finally {
    await browser.close();
  }
} finally {
  stopServer();
  cluster.stop();
}
