import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/storage/database.ts';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { startWumServer, type WumServer } from '../../harness/wum-server.ts';
import { BACKEND } from '../helpers/test-context.ts';

const ROWS = 200_000;
/** Bytes of padding in each seeded event: the whole export is then about 140 MB. */
const PADDING = 500;
const TIMEOUT = { timeout: 120_000 };
/** The server's V8 heap limit in the test, below the export's size. */
const HEAP_MB = 96;

/** The resident set of a process, in bytes (Linux). */
function rss(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/**
 * Reads an export of the operator API to its end without keeping it, sampling the server's
 * RSS meanwhile: the events and bytes read, and the largest RSS seen.
 */
function readExport(server: WumServer, query: string): Promise<{ lines: number; bytes: number; peakRss: number }> {
  const pid = server.process.child.pid!;
  let peakRss = rss(pid);
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rss(pid))), 50);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: server.port, path: `/admin/v1/audit-events/export?${query}`, headers: { host: 'localhost', authorization: `Bearer ${server.adminToken}` } },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`export answered ${res.statusCode}`));
        let lines = 0;
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines += 1;
        });
        res.on('end', () => {
          clearInterval(sampler);
          resolve({ lines, bytes, peakRss: Math.max(peakRss, rss(pid)) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * An export of a long trail runs in constant memory: the server reads it in keyset batches and
 * writes with backpressure (docs/api.md, "Exporting the audit trail"), so exporting 200,000
 * events (about 140 MB) grows the server's RSS no more than a bounded amount over a tiny export.
 */
describe(`audit export memory [${BACKEND}]`, () => {
  let server: WumServer;
  let postgres: PostgresDatabase | undefined;
  let dataDir: string | undefined;

  before(async () => {
    const storage: Record<string, string> = {};
    if (BACKEND === 'postgres') {
      postgres = await createPostgresDatabase('wum_audit_export', { migrated: true });
      storage.DATABASE_URL = postgres.url;
    } else {
      dataDir = mkdtempSync(join(tmpdir(), 'wum-audit-export-'));
      storage.DATA_DIR = join(dataDir, 'data');
    }
    const database = await openDatabase(
      postgres ? { kind: 'postgres', url: postgres.url, poolSize: 2 } : { kind: 'pglite', dataDir: storage.DATA_DIR! },
    );
    try {
      // Seeded by SQL before the server starts: the catalogue's kind of event (no workspace).
      await database.db.execute(sql`insert into audit_events (workspace_id, actor_type, action, target_type, target_id, after)
        select null, 'system', 'test.seeded', 'test', 'row-' || n, jsonb_build_object('n', n, 'padding', repeat('x', ${PADDING}::int))
        from generate_series(1, ${ROWS}::int) as n`);
    } finally {
      await database.close();
    }
    // The heap capped as in production (`npm run start:prod`): an export held in memory would not fit in it.
    server = await startWumServer({ ...storage, NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` });
  }, TIMEOUT);

  after(async () => {
    await server?.stop();
    await postgres?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  test(`exporting ${ROWS.toLocaleString('en')} events grows the server's RSS by a bounded amount`, TIMEOUT, async () => {
    // Warm up: the route, the statements and the buffers of a small export.
    await readExport(server, 'target_id=row-1');
    const small = await readExport(server, 'target_id=row-2');
    assert.equal(small.lines, 1);
    const started = Date.now();
    const large = await readExport(server, 'action=test.seeded');
    assert.equal(large.lines, ROWS);
    assert.ok(large.bytes > ROWS * PADDING, `${large.bytes} bytes`);
    const growth = large.peakRss - small.peakRss;
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MB`;
    // Buffered, the export alone would take more than its 140 MB (beyond the heap limit); streamed, a few batches.
    assert.ok(growth < 64 * 2 ** 20, `RSS grew by ${mb(growth)} (${mb(small.peakRss)} → ${mb(large.peakRss)}), ${mb(large.bytes)} exported in ${Date.now() - started} ms`);
  });
});
