/*
 * Bundles the server (src/server/server.ts) and the CLI (src/cli/main.ts) with esbuild, each
 * into one JavaScript module in bundle/: what `npm start` and `wum` run. Node then loads one
 * file instead of resolving, reading and compiling some 1,500 modules (tsx transpiling ours on
 * the way), which was most of a start's time: docs/performance.md, "The embedded store".
 *
 * Everything is bundled but a few packages of the server (SERVER_EXTERNAL). Nothing is minified, so stack traces keep their function names. Paths of files
 * shipped beside the code are resolved from the package root (src/package-root.ts), not from
 * the module's location, so they are the same inside the bundle.
 *
 * `npm start` runs this with `--if-stale` (scripts/prestart.ts), `npm run build` and the test
 * runner without: a build is stale when the fingerprint of its inputs (src/, sdk/, the
 * lockfile, this script) differs from the one it recorded.
 */
import { mkdirSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { filesUnder, fingerprint, isCurrent, ROOT, withLock, writeStamp, type BuildStamp } from './build-stamp.ts';

/** Where the bundles are written. */
export const BUNDLE_DIR = join(ROOT, 'bundle');
/** The bundled server: `node bundle/server.mjs` is `npm start` without the build check. */
export const SERVER_BUNDLE = join(BUNDLE_DIR, 'server.mjs');
/** The bundled CLI, run by bin/wum.js when it is current. */
export const CLI_BUNDLE = join(BUNDLE_DIR, 'wum.mjs');

const LOCK = join(ROOT, '.bundle-lock');
const STAMP: BuildStamp = {
  file: join(BUNDLE_DIR, '.fingerprint'),
  inputs: () => [
    ...filesUnder(join(ROOT, 'src')),
    ...filesUnder(join(ROOT, 'sdk')),
    join(ROOT, 'package-lock.json'),
    fileURLToPath(import.meta.url),
  ],
};

/** True when bundle/ holds bundles of the current sources. */
export function bundlesAreCurrent(): boolean {
  return isCurrent(STAMP, [SERVER_BUNDLE, CLI_BUNDLE]);
}

/**
 * Packages the server leaves out of its bundle and imports from node_modules: PGlite, which
 * loads its WebAssembly and data files from beside its own module, the API reference viewer,
 * which serves its page's assets from beside its own module too (imported on the first `/docs`
 * request), and what the server imports only when needed (undici with the first webhook
 * delivery; ioredis with REDIS_URL; tar on a new DATA_DIR), so that a start does not even
 * parse them.
 */
const SERVER_EXTERNAL = ['@electric-sql/pglite', '@fastify/swagger-ui', 'undici', 'ioredis', 'tar'];

async function bundle(): Promise<void> {
  const { build } = await import('esbuild');
  rmSync(BUNDLE_DIR, { recursive: true, force: true });
  mkdirSync(BUNDLE_DIR, { recursive: true });
  const common = {
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Bundled CommonJS packages call require() for Node's own modules; an ES module has none.
    banner: { js: "import { createRequire as __wumCreateRequire } from 'node:module'; const require = __wumCreateRequire(import.meta.url);" },
    legalComments: 'none',
    logLevel: 'silent',
  } as const;
  await Promise.all([
    build({ ...common, entryPoints: [join(ROOT, 'src', 'server', 'server.ts')], outfile: SERVER_BUNDLE, external: SERVER_EXTERNAL }),
    build({ ...common, entryPoints: [join(ROOT, 'src', 'cli', 'main.ts')], outfile: CLI_BUNDLE }),
  ]);
}

/**
 * bin/wum.js runs the bundled CLI only when no source file is newer than it (a cheap test at
 * every command): a bundle found current by content after a source was touched but not changed
 * (a checkout, a save) gets a new modification time, so that the CLI goes on using it.
 */
function markCurrent(): false {
  const now = new Date();
  utimesSync(CLI_BUNDLE, now, now);
  return false;
}

/**
 * Builds bundle/server.mjs and bundle/wum.mjs.
 * @param options.ifStale - skip the build when bundle/ already holds one of the current inputs.
 * @returns whether a build ran.
 * @throws esbuild's error (a syntax or resolution error in the sources).
 */
export async function buildBundles(options: { ifStale?: boolean } = {}): Promise<boolean> {
  if (options.ifStale && bundlesAreCurrent()) return markCurrent();
  return withLock(LOCK, async () => {
    if (options.ifStale && bundlesAreCurrent()) return markCurrent();
    const print = fingerprint(STAMP.inputs());
    await bundle();
    writeStamp(STAMP, print);
    return true;
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (await buildBundles({ ifStale: process.argv.includes('--if-stale') })) process.stdout.write('Bundled the server and the CLI into bundle/.\n');
}
