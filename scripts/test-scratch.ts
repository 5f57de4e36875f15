/*
 * Where `npm test` keeps its throw-away files: the PostgreSQL cluster, the servers' data
 * directories, the templates and the reports. Creating a file on this machine's disk costs
 * about 0.4 ms (a PGlite data directory is 500 files, a PostgreSQL database 300); in memory it
 * costs a tenth of that, and nothing the tests observe depends on which (docs/performance.md,
 * "npm test").
 */
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The machine's memory-backed file system, where Linux has one. */
const MEMORY_DIR = '/dev/shm';

function writableDirectory(path: string): boolean {
  try {
    if (!statSync(path).isDirectory()) return false;
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes a new directory the temporary directory (`TMPDIR`) of this process and of every process
 * it starts, and removes it with everything in it when this process exits (a signal included).
 * It is made in `WUM_TEST_TMPDIR` when set, else in /dev/shm when writable, else in the usual
 * temporary directory; it is world-writable with the sticky bit, as /tmp is, because the
 * PostgreSQL servers of the tests run as the `postgres` user.
 * @returns the directory's path.
 */
export function useScratchTmpdir(): string {
  const parent = process.env.WUM_TEST_TMPDIR || (writableDirectory(MEMORY_DIR) ? MEMORY_DIR : tmpdir());
  const dir = mkdtempSync(join(parent, 'wum-test-'));
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) process.once(signal, () => process.exit(code));
  return dir;
}
