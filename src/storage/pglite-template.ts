/*
 * The pre-initialised PGlite data directory: what PGlite's initdb writes, made once
 * (`npm run build:pglite-template`), committed as a Brotli-compressed tar named after the
 * PGlite version it was made with, and unpacked into a new DATA_DIR instead of running initdb
 * there. initdb in WebAssembly is most of an embedded first start's time and memory: PGlite
 * runs it in a second PGlite instance beside a third WebAssembly module (docs/performance.md,
 * "The embedded store"). The template holds no wum table: the migrations run on it at start
 * as on any existing DATA_DIR, so a new migration never makes it stale; a new PGlite version
 * does, and then `openDatabase` falls back to PGlite's own initdb.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliDecompress, constants as zlib, createBrotliCompress, createBrotliDecompress } from 'node:zlib';

const decompress = promisify(brotliDecompress);

/** Directory of the committed templates (copied next to the compiled storage code by `npm run build`). */
export const PGLITE_TEMPLATE_DIR = fileURLToPath(new URL('./pglite-template', import.meta.url));

/** The file PostgreSQL reads first in a data directory; written last, so its presence means complete. */
const VERSION_FILE = 'PG_VERSION';

/** Version of the installed `@electric-sql/pglite` (its package.json is not among its exports). */
export function installedPgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

/** Path of the template made with PGlite `version` (whether or not it exists). */
export function pgliteTemplatePath(version = installedPgliteVersion()): string {
  return join(PGLITE_TEMPLATE_DIR, `pglite-${version}.tar.br`);
}

/**
 * True when a data directory holds a complete PostgreSQL cluster: PGlite's test for "resume
 * instead of initdb", and ours for "nothing to unpack".
 */
export function isInitialisedDataDir(dataDir: string): boolean {
  return existsSync(join(dataDir, VERSION_FILE));
}

/**
 * Unpacks the template of the installed PGlite into `dataDir` (created if missing), streaming:
 * the 40 MB directory never sits in memory. `PG_VERSION` is the archive's last entry, so a
 * crash midway leaves a directory that {@link isInitialisedDataDir} calls new, and the next
 * start unpacks it again over what is there.
 * @returns false, touching nothing, when no template matches the installed PGlite version.
 */
export async function unpackPgliteTemplate(dataDir: string): Promise<boolean> {
  const template = pgliteTemplatePath();
  if (!existsSync(template)) return false;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Loaded only here: a process on PostgreSQL, or on an existing DATA_DIR, does not need it.
  const { extract } = await import('tar');
  await pipeline(createReadStream(template), createBrotliDecompress(), extract({ cwd: dataDir, strict: true }));
  return true;
}

/**
 * The template of the installed PGlite as an uncompressed tar, for PGlite's `loadDataDir`
 * (an in-memory database has no directory to unpack into), or undefined when none matches.
 */
export async function readPgliteTemplate(): Promise<Blob | undefined> {
  const template = pgliteTemplatePath();
  if (!existsSync(template)) return undefined;
  return new Blob([await decompress(await readFile(template))]);
}

/**
 * Makes the template of the installed PGlite: PGlite's initdb into an empty scratch directory
 * `scratchDir` (a clean shutdown after), then a portable tar of it (no owner, no times) with
 * `PG_VERSION` last, compressed with Brotli's densest setting and a 16 MB window, which finds
 * the three near-identical databases initdb writes (template0, template1, postgres): 40 MB
 * become about 1.4 MB, against 4.4 MB with gzip.
 * @returns the template's path.
 */
export async function buildPgliteTemplate(scratchDir: string): Promise<string> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { create } = await import('tar');
  const pglite = await PGlite.create(scratchDir);
  await pglite.close();
  const entries = readdirSync(scratchDir).filter((name) => name !== VERSION_FILE).sort();
  mkdirSync(PGLITE_TEMPLATE_DIR, { recursive: true });
  const path = pgliteTemplatePath();
  await pipeline(
    create({ cwd: scratchDir, portable: true, noMtime: true }, [...entries, VERSION_FILE]),
    createBrotliCompress({
      params: { [zlib.BROTLI_PARAM_QUALITY]: zlib.BROTLI_MAX_QUALITY, [zlib.BROTLI_PARAM_LGWIN]: zlib.BROTLI_MAX_WINDOW_BITS },
    }),
    createWriteStream(path),
  );
  return path;
}
