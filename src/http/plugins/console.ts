import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { packagePath } from '../../package-root.ts';
import { ConsolePageResponses, consoleSchema } from '../schemas/console.ts';

/** Where the web console is served: `/console/` on any host (docs/console.md). */
export const CONSOLE_PREFIX = '/console';

/** The built console (`npm run build`, or the first `npm start`): `console/dist` at the repository root. */
export const CONSOLE_DIST_DIR = `${packagePath('console/dist')}/`;

/**
 * Content-Security-Policy of the console: its own scripts, styles and API calls only; no
 * inline script or style, no other origin, no plugins, no framing; Trusted Types required, so
 * no string can ever reach an HTML or script sink (the console renders through Preact's DOM
 * calls only). Source: docs/console.md, "How it is built"; W3C CSP Level 3; W3C Trusted Types.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** Hashed assets never change under their name: cache them for a year (RFC 8246 `immutable`). */
const ASSET_MAX_AGE_MS = 365 * 24 * 60 * 60 * 1000;

/** The page served when `console/dist` has not been built (a server installed with `--omit=dev`). */
const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>wum console not built</title></head>
<body><main><h1>The wum console has not been built</h1>
<p>Run <code>npm run build</code> (or <code>npm start</code>, which builds it when it is missing) in the
server's directory, then reload this page. The HTTP API works without it.</p></main></body></html>
`;

/** Options of {@link registerConsole}. */
export interface ConsoleOptions {
  /** Directory of the built console (its `index.html` and `assets/`). Default {@link CONSOLE_DIST_DIR}. */
  readonly distDir?: string;
}

/** Sends the console's HTML shell: revalidated on every load, so a new build is picked up at once. */
async function sendShell(reply: FastifyReply, distDir: string): Promise<void> {
  let html: string;
  try {
    html = await readFile(join(distDir, 'index.html'), 'utf8');
  } catch {
    html = NOT_BUILT_PAGE;
  }
  reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(html);
}

/**
 * Serves the web console at `/console/` from the same process: the HTML shell for `/console/`
 * and every client-side route under it (the console routes in the browser), the hashed
 * `assets/` as static files (precompressed `.br`/`.gz` when the client accepts them, cached a
 * year, immutable), and `/console` redirected to `/console/`. Every console response carries
 * {@link CONSOLE_CSP} instead of the API's `default-src 'none'`. The console itself calls only
 * the public APIs, so nothing here authenticates. Source: docs/console.md; docs/architecture.md "Growing the house".
 */
export async function registerConsole(app: FastifyInstance, options: ConsoleOptions = {}): Promise<void> {
  const distDir = options.distDir ?? CONSOLE_DIST_DIR;
  await app.register(async (scope) => {
    // Encapsulated: this hook runs for the console's routes only, after the security headers.
    scope.addHook('onRequest', (_request, reply, done) => {
      reply.header('content-security-policy', CONSOLE_CSP);
      done();
    });
    const page = { schema: consoleSchema({ summary: 'The console', security: [], response: ConsolePageResponses.page }) };
    scope.get(CONSOLE_PREFIX, { schema: consoleSchema({ summary: 'The console, at its address', security: [], response: ConsolePageResponses.redirect }) }, (_request, reply) => {
      reply.redirect(`${CONSOLE_PREFIX}/`, 308);
    });
    scope.get(`${CONSOLE_PREFIX}/`, page, (_request, reply) => sendShell(reply, distDir));
    scope.get(`${CONSOLE_PREFIX}/*`, page, (_request, reply) => sendShell(reply, distDir));
    await scope.register(fastifyStatic, {
      root: join(distDir, 'assets'),
      prefix: `${CONSOLE_PREFIX}/assets/`,
      decorateReply: false,
      index: false,
      preCompressed: true,
      immutable: true,
      maxAge: ASSET_MAX_AGE_MS,
      // Missing files (or no build at all) fall through to the API's 404 problem.
      wildcard: true,
      schemaHide: true,
    });
  });
}
