/*
 * Where `npm test` keeps its throw-away files: the PostgreSQL cluster, the servers' data
 * directories, the templates and the reports. Creating a file on this machine's disk costs
 * about 0.4 ms (a PGlite data directory is 500 files, a PostgreSQL database 300); in memory it
 * costs a tenth of that, and nothing the tests observe depends on which (docs/performance.md,
 * "npm test").
 */
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, statfsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The machine's memory-backed file system, where Linux has one. */
const MEMORY_DIR = '/dev/shm';

/** Free space a run needs in memory: about 1.2 GB at its peak on the 2-core machine, with room to spare. */
const MEMORY_NEEDED_BYTES = 4 * 1024 ** 3;

/** Whether `path` is a directory this process may write, with room for a run (a container's /dev/shm may be 64 MB). */
function roomyDirectory(path: string): boolean {
  try {
    if (!statSync(path).isDirectory()) return false;
    accessSync(path, constants.W_OK);
    const { bavail, bsize } = statfsSync(path);
    return bavail * bsize >= MEMORY_NEEDED_BYTES;
  } catch {
    return false;
  }
}

/**
 * Makes a new directory the temporary directory (`TMPDIR`) of this process and of every process
 * it starts, and removes it with everything in it when this process exits (a signal included).
 * It is made in `WUM_TEST_TMPDIR` when set, else in /dev/shm when writable with 4 GB free, else in the usual
 * temporary directory; it is world-writable with the sticky bit, as /tmp is, because the
 * PostgreSQL servers of the tests run as the `postgres` user.
 * @returns the directory's path.
 */
export function useScratchTmpdir(): string {
  const parent = process.env.WUM_TEST_TMPDIR || (roomyDirectory(MEMORY_DIR) ? MEMORY_DIR : tmpdir());
  const dir = mkdtempSync(join(parent, 'wum-test-'));
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) process.once(signal, () => process.exit(code));
  return dir;
}
