/*
 * Builds the web console (console/) into console/dist with esbuild (one bundle of its
 * TypeScript/JSX and one of its CSS, with content hashes in their names, and index.html
 * pointing at them), then writes a gzip and a Brotli copy of each asset beside it (served by the console plugin when the browser accepts
 * them). `npm run build` runs it; `npm start` runs it first when stale (scripts/prestart.ts), so the quick
 * start's two commands give a working console, and a pull that changed the console rebuilds
 * it once. A build is stale when the fingerprint of its inputs (console sources, the API
 * types, the lockfile) differs from the one it recorded. Concurrent callers (test files)
 * wait on a lock directory instead of building twice.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { filesUnder, fingerprint, isCurrent, ROOT, withLock, writeStamp, type BuildStamp } from './build-stamp.ts';

const CONSOLE = join(ROOT, 'console');
const DIST = join(CONSOLE, 'dist');
const LOCK = join(CONSOLE, '.build-lock');
/** Inputs of the build besides console/src and sdk/ (what the console imports): a change in any of them makes a new build. */
const INPUT_FILES = ['console/index.html', 'console/tsconfig.json', 'package-lock.json'];
const STAMP: BuildStamp = {
  file: join(DIST, '.fingerprint'),
  inputs: () => [...filesUnder(join(CONSOLE, 'src')), ...filesUnder(join(ROOT, 'sdk')), ...INPUT_FILES.map((f) => join(ROOT, f))],
};

/** A hash of every input of the console build (paths and contents). */
export function consoleFingerprint(): string {
  return fingerprint(STAMP.inputs());
}

/** True when console/dist holds a build of the current inputs. */
export function consoleIsBuilt(): boolean {
  return isCurrent(STAMP, [join(DIST, 'index.html')]);
}

function compressAssets(): void {
  for (const file of filesUnder(join(DIST, 'assets'))) {
    if (!/\.(js|css|svg|json)$/.test(file)) continue;
    const content = readFileSync(file);
    writeFileSync(`${file}.gz`, gzipSync(content, { level: 9 }));
    writeFileSync(`${file}.br`, brotliCompressSync(content, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
  }
}

/** The tag of console/index.html that names the entry module; the build replaces it. */
const ENTRY_TAG = '<script type="module" src="/src/main.tsx"></script>';

/**
 * Bundles console/src/main.tsx into console/dist/assets (`main-<hash>.js` and
 * `main-<hash>.css`) and writes console/dist/index.html linking them under /console/assets/.
 * Preact stands in for React (preact/compat), so React libraries (TanStack Query and Table,
 * react-hook-form) run on Preact's runtime.
 */
async function bundle(): Promise<void> {
  const { build } = await import('esbuild');
  rmSync(DIST, { recursive: true, force: true });
  const result = await build({
    entryPoints: [join(CONSOLE, 'src', 'main.tsx')],
    absWorkingDir: ROOT,
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    minify: true,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    alias: { react: 'preact/compat', 'react-dom': 'preact/compat' },
    define: { 'process.env.NODE_ENV': '"production"' },
    outdir: join(DIST, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'silent',
    // TanStack Query marks its hooks "use client" for React Server Components; meaningless here.
    logOverride: { 'unsupported-directive': 'silent' },
  });
  const [js, output] = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint?.endsWith('main.tsx'))!;
  const url = (file: string) => `/console/assets/${file.slice(file.lastIndexOf('/') + 1)}`;
  const tags = [
    ...(output.cssBundle ? [`<link rel="stylesheet" href="${url(output.cssBundle)}" />`] : []),
    `<script type="module" src="${url(js)}"></script>`,
  ];
  const html = readFileSync(join(CONSOLE, 'index.html'), 'utf8');
  if (!html.includes(ENTRY_TAG)) throw new Error(`console/index.html lost its entry tag ${ENTRY_TAG}`);
  writeFileSync(join(DIST, 'index.html'), html.replace(ENTRY_TAG, tags.join('\n    ')));
}

/**
 * Builds the console into console/dist (esbuild, then precompressed copies of the assets).
 * @param options.ifStale - skip the build when console/dist already holds one of the current inputs.
 * @returns whether a build ran.
 * @throws the build's error (a syntax or resolution error in console/src).
 */
export async function buildConsole(options: { ifStale?: boolean } = {}): Promise<boolean> {
  if (options.ifStale && consoleIsBuilt()) return false;
  return withLock(LOCK, async () => {
    if (options.ifStale && consoleIsBuilt()) return false;
    const print = consoleFingerprint();
    await bundle();
    compressAssets();
    writeStamp(STAMP, print);
    return true;
  });
}

/**
 * What `npm start` does about the console (scripts/prestart.ts): builds it when stale, and
 * never keeps the API from starting. Installed without dev dependencies, it says the console
 * is not built instead; a failed build is reported and the start goes on.
 */
export async function buildConsoleForStart(): Promise<void> {
  try {
    if (!existsSync(join(ROOT, 'node_modules', 'preact'))) {
      if (!existsSync(join(DIST, 'index.html'))) process.stderr.write('The web console is not built (its dev dependencies are not installed): run npm install, then npm run build.\n');
    } else if (await buildConsole({ ifStale: true })) {
      process.stdout.write('Built the web console into console/dist.\n');
    }
  } catch (error) {
    process.stderr.write(`Could not build the web console: ${(error as Error).message}\n`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildConsole();
  process.stdout.write('Built the web console into console/dist.\n');
}
