// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

/*
 * The repository stands alone (docs/architecture.md, "Growing the house"): comments and docs cite
 * docs/contract.md and docs/architecture.md, never the files they replaced, which a clone does
 * not have, nor a folder beside the repository, nor an issue of the tracker (the decision it
 * holds belongs in a doc).
 */

/** Citations of sources outside the repository: the replaced files, the folder beside it, an issue. */
const OUTSIDE = /\bSPEC\.md\b|\bDESIGN\.md\b|\.\.\/shared\/|\b[Ii]ssues? #?\d+/;

/** Files allowed to match, each with its reason. */
const ALLOWED = new Map([
  // The SCIM conformance runner reads the third-party suites, which may never be copied in, from there.
  ['scripts/scim-conformance/run.ts', 'names the folder it reads'],
  // This test spells the patterns it looks for.
  ['test/docs/citations.test.ts', 'the check itself'],
]);

test(`no tracked file cites a source outside the repository`, () => {
  const files = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' })
    .split('\0')
    .filter((f) => f && !ALLOWED.has(f) && /\.(ts|tsx|js|mjs|md|json|yaml|yml|sh)$|^\.ci\//.test(f));
  const citing = files.filter((f) => {
    try {
      return OUTSIDE.test(readFileSync(f, 'utf8'));
    } catch {
      return false; // listed but absent from this checkout (a file deleted and not yet committed)
    }
  });
  assert.deepEqual(citing, []);
});
