/*
 * `npm run build:pglite-template`: makes the pre-initialised PGlite data directory that a new
 * DATA_DIR is unpacked from (src/storage/pglite-template.ts), for the installed PGlite
 * version. Run it after upgrading @electric-sql/pglite and commit the new file (and remove the
 * old one); test/storage/pglite-template.test.ts fails until then.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateEmbedded } from '../src/storage/database.ts';
import { buildPgliteTemplate } from '../src/storage/pglite-template.ts';

const scratch = mkdtempSync(join(tmpdir(), 'wum-pglite-template-'));
try {
  const started = performance.now();
  const path = await buildPgliteTemplate(join(scratch, 'data'), migrateEmbedded);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`wrote ${path} (${(statSync(path).size / 1e6).toFixed(2)} MB) in ${seconds} s\n`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
