import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { Registry } from 'prom-client';
import type { MaintenanceSettings } from '../../src/config/load-config.ts';
import { ALL_TABLES, EMBEDDED_STATISTICS_TARGET, maintainEmbeddedStore, createEmbeddedMaintenance, type MaintenancePass } from '../../src/storage/embedded-maintenance.ts';
import { createScheduler } from '../../src/server/scheduler.ts';
import { BACKEND, createTestContext, testConfig, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';

/*
 * The embedded store maintains itself (docs/operations.md, "The embedded store maintains
 * itself"): PGlite has no autovacuum, so the server process analyzes and vacuums its tables
 * when autovacuum would. On PostgreSQL autovacuum does it and the task is not started.
 */

const SETTINGS: MaintenanceSettings = { intervalMs: 60_000, analyzeScaleFactor: 0.1, vacuumScaleFactor: 0.2 };

interface TableState {
  last_analyze: string | null;
  last_vacuum: string | null;
  reltuples: number;
  n_dead_tup: number;
  analyze_count: number;
}

/** A captured log: the info lines and warnings the task wrote. */
function captureLog() {
  const lines: Array<{ level: 'info' | 'warn'; fields: Record<string, unknown>; message: string }> = [];
  return {
    lines,
    info: (fields: Record<string, unknown>, message: string) => void lines.push({ level: 'info', fields, message }),
    warn: (fields: Record<string, unknown>, message: string) => void lines.push({ level: 'warn', fields, message }),
  };
}

describe(`the embedded store's maintenance is started on PGlite only [${BACKEND}]`, () => {
  let ctx: TestContext;
  before(async () => (ctx = await createTestContext()));
  after(() => ctx?.close());

  test('on by default with autovacuum\'s scale factors; off with EMBEDDED_MAINTENANCE=false', () => {
    assert.deepEqual(testConfig().embeddedMaintenance, { intervalMs: 5_000, analyzeScaleFactor: 0.1, vacuumScaleFactor: 0.2 });
    assert.equal(testConfig({ EMBEDDED_MAINTENANCE: 'false' }).embeddedMaintenance, undefined);
    assert.throws(() => testConfig({ EMBEDDED_ANALYZE_SCALE_FACTOR: '-1' }), /EMBEDDED_ANALYZE_SCALE_FACTOR/);
  });

  test(BACKEND === 'pglite' ? 'started over PGlite' : 'not started over PostgreSQL (autovacuum does it)', async () => {
    const started = maintainEmbeddedStore(ctx.database, SETTINGS, captureLog());
    assert.equal(started !== undefined, BACKEND === 'pglite');
    await started?.stop();
    assert.equal(maintainEmbeddedStore(ctx.database, undefined, captureLog()), undefined, 'switched off');
  });
});

if (BACKEND === 'pglite') {
  describe('the embedded store analyzes and vacuums itself [pglite]', () => {
    let ctx: TestContext;
    let ws: TestWorkspace;

    const state = async (table: string): Promise<TableState> => {
      await ctx.database.db.execute(sql`select pg_stat_force_next_flush()`);
      const result = (await ctx.database.db.execute(sql`select s.last_analyze, s.last_vacuum, c.reltuples::float8 as reltuples,
          s.n_dead_tup::int as n_dead_tup, s.analyze_count::int as analyze_count
        from pg_stat_user_tables s join pg_class c on c.oid = s.relid where s.relname = ${table}`)) as unknown as { rows: TableState[] };
      return result.rows[0]!;
    };

    /** Runs steps until nothing is due; returns the passes. */
    const settle = async (step: () => Promise<MaintenancePass | undefined>) => {
      const passes: MaintenancePass[] = [];
      for (let pass = await step(); pass; pass = await step()) passes.push(pass);
      return passes;
    };

    before(async () => {
      ctx = await createTestContext({ RATE_LIMIT_PER_KEY: '0' });
      await ctx.seedProducts();
      ws = await ctx.createWorkspace('maint');
    });
    after(() => ctx?.close());

    test('after 300 adds through the API, a step analyzes users: its statistics count them', async () => {
      for (let i = 0; i < 300; i += 1) assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(`a${i}@example.com`) })).statusCode, 201);
      assert.equal((await state('users')).last_analyze, null, 'never analyzed before');
      const log = captureLog();
      const registry = new Registry();
      const maintenance = createEmbeddedMaintenance({ db: ctx.database.db, settings: SETTINGS, log, registry });
      try {
        const passes = await settle(() => maintenance.step());
        const tables = passes.map((p) => p.table);
        for (const table of ['users', 'user_apps', 'user_counts', 'events', 'audit_events']) assert.ok(tables.includes(table), `${table} in ${tables}`);
        assert.equal(new Set(tables).size, tables.length, 'one pass per table');
        const users = await state('users');
        assert.notEqual(users.last_analyze, null);
        assert.ok(users.reltuples >= 300, `reltuples ${users.reltuples}`);
        // Sampled at the store's smaller target (a histogram of 300 distinct emails has at most
        // target + 1 bounds), which the pass set for itself only.
        const stats = (await ctx.database.db.execute(
          sql`select cardinality(histogram_bounds::text::text[]) as bounds from pg_stats where tablename = 'users' and attname = 'email'`,
        )) as unknown as { rows: Array<{ bounds: number }> };
        assert.ok(stats.rows[0] && stats.rows[0].bounds <= EMBEDDED_STATISTICS_TARGET + 1, JSON.stringify(stats.rows));
        const target = (await ctx.database.db.execute(sql`show default_statistics_target`)) as unknown as { rows: Array<{ default_statistics_target: string }> };
        assert.equal(target.rows[0]!.default_statistics_target, '100');
        // One info line per pass, with its duration; counted in /metrics.
        assert.equal(log.lines.length, passes.length);
        const line = log.lines.find((l) => l.fields.table === 'users')!;
        assert.equal(line.level, 'info');
        assert.equal(typeof line.fields.durationMs, 'number');
        const metrics = await registry.metrics();
        assert.match(metrics, /wum_embedded_maintenance_passes_total\{table="users",action="(analyze|vacuum)"\} 1/);
        assert.match(metrics, /wum_embedded_maintenance_duration_seconds_count\{action="analyze"\} [1-9]/);
        // Below the thresholds again: a few more adds (fewer than 50 + 10 %) are not worth a pass.
        for (let i = 0; i < 20; i += 1) await ctx.api(ws, 'POST', '/users', { body: userBody(`b${i}@example.com`) });
        assert.deepEqual((await settle(() => maintenance.step())).filter((p) => p.table === 'users'), []);
      } finally {
        await maintenance.stop();
      }
    });

    test('dead rows of deactivations and reactivations are vacuumed', async () => {
      for (let i = 0; i < 150; i += 1) {
        assert.equal((await ctx.api(ws, 'DELETE', `/users/a${i}@example.com`)).statusCode, 204);
        assert.equal((await ctx.api(ws, 'PATCH', `/users/a${i}@example.com`, { body: { user: { status: 'active' } } })).statusCode, 200);
      }
      const before = await state('users');
      assert.ok(before.n_dead_tup > 50 + 0.2 * before.reltuples, `dead ${before.n_dead_tup} of ${before.reltuples}`);
      const maintenance = createEmbeddedMaintenance({ db: ctx.database.db, settings: SETTINGS, log: captureLog() });
      try {
        const passes = await settle(() => maintenance.step());
        assert.ok(passes.some((p) => p.table === 'users' && p.action === 'vacuum'), JSON.stringify(passes));
        const after = await state('users');
        assert.notEqual(after.last_vacuum, null);
        assert.ok(after.n_dead_tup < 50, `dead rows left: ${after.n_dead_tup}`);
      } finally {
        await maintenance.stop();
      }
    });

    test('checkpoints once the WAL since the last checkpoint passes the checkpointer\'s threshold, which bounds the WAL', async () => {
      const wal = async () => {
        const result = (await ctx.database.db.execute(sql`select pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::float8 as since,
            (select sum(size) from pg_ls_waldir())::float8 as bytes from pg_control_checkpoint()`)) as unknown as { rows: Array<{ since: number; bytes: number }> };
        return result.rows[0]!;
      };
      // Each switch ends a 16 MB segment after one row: the WAL a burst of changes writes.
      const writeSegments = async (count: number) => {
        for (let i = 0; i < count; i += 1) {
          assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(`w${Date.now()}-${i}@example.com`) })).statusCode, 201);
          await ctx.database.db.execute(sql`select pg_switch_wal()`);
        }
      };
      const maintenance = createEmbeddedMaintenance({ db: ctx.database.db, settings: SETTINGS, log: captureLog() });
      try {
        await writeSegments(6);
        const before = await wal();
        // max_wal_size 64 MB / (1 + checkpoint_completion_target 0.9): 33.7 MB.
        assert.ok(before.since > 64 * 2 ** 20 && before.bytes >= 96 * 2 ** 20, JSON.stringify(before));
        const pass = await maintenance.step();
        assert.equal(pass?.action, 'checkpoint', JSON.stringify(pass));
        assert.equal(pass.table, ALL_TABLES);
        assert.ok(pass.walBytes! >= before.since, `${pass.walBytes} ≥ ${before.since}`);
        const after = await wal();
        assert.ok(after.since < 2 ** 20, `WAL since the checkpoint: ${after.since}`);
        assert.ok(after.bytes <= 80 * 2 ** 20, `segments kept: ${after.bytes / 2 ** 20} MB`);
        // One more segment is below the threshold: no checkpoint.
        await writeSegments(1);
        const passes = await settle(() => maintenance.step());
        assert.deepEqual(passes.filter((p) => p.action === 'checkpoint'), []);
      } finally {
        await maintenance.stop();
      }
    });

    test('runs by itself between requests, and not after it stopped', async () => {
      const log = captureLog();
      const maintenance = createEmbeddedMaintenance({ db: ctx.database.db, settings: { ...SETTINGS, intervalMs: 100 }, log });
      // As the server schedules it (server/background.ts).
      const scheduler = createScheduler(log);
      scheduler.add({ name: 'embedded-maintenance', intervalMs: 100, run: async () => maintenance.delayAfter(await maintenance.step()) });
      const analyzed = (await state('users')).analyze_count;
      for (let i = 0; i < 200; i += 1) await ctx.api(ws, 'POST', '/users', { body: userBody(`c${i}@example.com`) });
      const deadline = Date.now() + 10_000;
      while ((await state('users')).analyze_count === analyzed) {
        assert.ok(Date.now() < deadline, 'users analyzed within 10 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await scheduler.stop();
      const stoppedAt = (await state('users')).analyze_count;
      const logged = log.lines.length;
      for (let i = 0; i < 200; i += 1) await ctx.api(ws, 'POST', '/users', { body: userBody(`d${i}@example.com`) });
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal((await state('users')).analyze_count, stoppedAt, 'no pass after stop');
      assert.equal(log.lines.length, logged);
      assert.ok(log.lines.every((l) => l.level === 'info'), JSON.stringify(log.lines));
    });
  });
}
