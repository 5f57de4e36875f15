/*
 * The pre-initialised PGlite data directory: what PGlite's initdb writes, made once
 * (`npm run build:pglite-template`), committed as a Brotli-compressed tar named after the
 * PGlite version it was made with, and unpacked into a new DATA_DIR instead of running initdb
 * there. initdb in WebAssembly is most of an embedded first start's time and memory: PGlite
 * runs it in a second PGlite instance beside a third WebAssembly module (docs/performance.md,
 * "The embedded store"). The template is migrated to the newest migration when it is made, as
 * migrating in WebAssembly was the next second of a first start; the migrations still run at
 * every start as on any existing DATA_DIR, so a migration added since the template was made is
 * applied then (test/storage/database.test.ts fails until the template is made again). A new
 * PGlite version makes it unusable, and then `openDatabase` falls back to PGlite's own initdb.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { PGlite } from '@electric-sql/pglite';
import { brotliDecompress, constants as zlib, createBrotliCompress, createBrotliDecompress } from 'node:zlib';
import { packagePath } from '../package-root.ts';

const decompress = promisify(brotliDecompress);

/** Directory of the committed templates. */
export const PGLITE_TEMPLATE_DIR = packagePath('src/storage/pglite-template');

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
 * the 26 MB directory never sits in memory. `PG_VERSION` is the archive's last entry, so a
 * crash midway leaves a directory that {@link isInitialisedDataDir} calls new, and the next
 * start unpacks it again over what is there.
 * @returns false, touching nothing, when no template matches the installed PGlite version.
 */
export async function unpackPgliteTemplate(dataDir: string): Promise<boolean> {
  const template = pgliteTemplatePath();
  if (!existsSync(template)) return false;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Loaded only here: a process on PostgreSQL, or on an existing DATA_DIR, does not need it.
  const { UnpackSync } = await import('tar');
  // The archive is decompressed as a stream, but its 500 small files are written
  // synchronously: half the time of tar's asynchronous extraction (docs/performance.md).
  const unpack = new UnpackSync({ cwd: dataDir, strict: true });
  await pipeline(createReadStream(template), createBrotliDecompress(), async (chunks: AsyncIterable<Buffer>) => {
    for await (const chunk of chunks) unpack.write(chunk);
    unpack.end();
  });
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

/** Drops `template0` and `template1` (a template database cannot be dropped until it is marked as none). */
async function dropTemplateDatabases(pglite: PGlite): Promise<void> {
  await pglite.query(`update pg_database set datistemplate = false where datname in ('template0', 'template1')`);
  await pglite.query('drop database template0');
  await pglite.query('drop database template1');
}

/**
 * Makes the template of the installed PGlite: PGlite's initdb into an empty scratch directory
 * `scratchDir`, then `prepare` (the build script migrates it), a checkpoint and a clean
 * shutdown, then a portable tar of it (no owner, no times) with
 * `PG_VERSION` last, compressed with Brotli's densest setting and a 16 MB window.
 *
 * Of the three databases initdb writes, only `postgres` is kept: `template0` and `template1`
 * exist for `CREATE DATABASE`, which an embedded store never runs (PGlite serves one database),
 * and they were 600 of the directory's 1,100 files. Creating a file costs about 0.4 ms on a
 * virtual machine's disk, so every first start, and every in-memory database of the tests,
 * unpacked them for nothing (docs/performance.md, "The embedded store").
 * @returns the template's path.
 */
export async function buildPgliteTemplate(scratchDir: string, prepare: (pglite: PGlite) => Promise<void>): Promise<string> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { create } = await import('tar');
  const pglite = await PGlite.create(scratchDir);
  await prepare(pglite);
  await dropTemplateDatabases(pglite);
  await pglite.query('CHECKPOINT');
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
