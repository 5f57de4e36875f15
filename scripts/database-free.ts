/*
 * The rule behind "database-free" test files (docs/architecture.md, "Tests"): a test file whose
 * header has a line starting with `// database-free` opens no database, so `npm test` runs it
 * once instead of once per backend. The marker is checked, not trusted: the run of those files
 * cannot load a database driver (`pg`, PGlite), in the test process or in any Node process it
 * starts, so a marked file that opens a database (or starts a server, which does) fails.
 */
import { readFileSync } from 'node:fs';

const MARKER = /^\/\/ database-free\b/m;

/** Whether the test file at `path` carries the database-free marker (read from its text). */
export function isDatabaseFree(path: string): boolean {
  return MARKER.test(readFileSync(path, 'utf8'));
}

// Module hooks (node:module `register`) that refuse to resolve the database drivers; they run
// on the loader's own thread, so they are plain JavaScript handed over as a data: URL.
const REFUSE_DRIVERS = `
const DRIVER = /\\/node_modules\\/(?:pg|@electric-sql\\/pglite)\\//;
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (DRIVER.test(resolved.url)) {
    throw new Error('a database-free test loaded the database driver ' + specifier + ' (imported by ' + context.parentURL + '): drop its "// database-free" marker or what opens a database (scripts/database-free.ts)');
  }
  return resolved;
}`;

const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(REFUSE_DRIVERS)}`)});`;

/**
 * The `NODE_OPTIONS` value for a run of database-free files: the given options plus an
 * `--import` that installs the hooks refusing the database drivers. Through `NODE_OPTIONS` the
 * hooks reach the test files and every Node process they start (a server, the CLI).
 * The data: URL has no spaces, so it survives `NODE_OPTIONS`' splitting on them.
 */
export function databaseFreeNodeOptions(existing: string | undefined): string {
  const option = `--import=data:text/javascript,${encodeURIComponent(REGISTER)}`;
  return existing ? `${existing} ${option}` : option;
}
