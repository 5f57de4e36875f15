// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/*
 * docs/architecture.md names every room of the tree, as "The rooms of `src/`" says: each folder
 * directly under src/ as `name/`, and each folder of src/core/ as `core/name/`. A folder added
 * without its line in the design fails here. Reads files only: no database.
 */

/** The repository's root. */
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOC = readFileSync(join(REPO_ROOT, 'docs', 'architecture.md'), 'utf8');

/** The folders directly inside `dir` (relative to the repository), sorted. */
function foldersOf(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

test(`docs/architecture.md names every folder of src/ as \`name/\``, () => {
  const missing = foldersOf('src').filter((name) => !DOC.includes(`\`${name}/\``));
  assert.deepEqual(missing, [], 'folders of src/ that docs/architecture.md does not name');
});

test(`docs/architecture.md names every folder of src/core/ as \`core/name/\``, () => {
  const missing = foldersOf(join('src', 'core')).filter((name) => !DOC.includes(`\`core/${name}/\``));
  assert.deepEqual(missing, [], 'folders of src/core/ that docs/architecture.md does not name');
});
