import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase, type OpenDatabase } from '../../src/storage/database.ts';
import { afterCommit } from '../../src/storage/request-transaction.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { BACKEND, memoryDatabase } from '../helpers/test-context.ts';

/*
 * `afterCommit` tells the rest of the process (the webhook delivery worker) about a change only
 * once other sessions can see it: at once outside a request transaction, after the request
 * transaction's COMMIT inside one (a domain transaction there is a savepoint), and never after
 * a rollback. A signal sent earlier would wake the worker to look for rows it cannot see yet.
 */

describe(`afterCommit signals once the change is visible to others [${BACKEND}]`, () => {
  let pg: PostgresDatabase | undefined;
  let database: OpenDatabase;

  before(async () => {
    if (BACKEND === 'postgres') pg = await createPostgresDatabase('wum_after_commit', { migrated: true });
    database = await openDatabase(pg ? { kind: 'postgres', url: pg.url, poolSize: 3 } : memoryDatabase());
    await database.db.execute(sql`create table if not exists after_commit_probe (id int primary key)`);
  });
  after(async () => {
    await database?.close();
    await pg?.drop();
  });

  /** Whether row `id` of the probe table is visible outside any request transaction. */
  const visible = async (id: number) =>
    rowsOf<{ n: number | string }>(await database.db.execute(sql`select count(*) as n from after_commit_probe where id = ${id}`)).map((r) => Number(r.n))[0] === 1;

  test('outside a request transaction: at once', async () => {
    await database.db.execute(sql`insert into after_commit_probe values (1)`);
    let signalled = 0;
    afterCommit(() => (signalled += 1));
    assert.equal(signalled, 1);
    assert.ok(await visible(1));
  });

  if (BACKEND === 'postgres') {
    test('inside a request transaction: after its COMMIT, when the row is visible; never after a rollback', async () => {
      const committed = await database.beginRequestTransaction!();
      const seen: boolean[] = [];
      const checks: Array<Promise<void>> = [];
      await committed.run(async () => {
        await database.db.execute(sql`insert into after_commit_probe values (2)`);
        afterCommit(() => checks.push(visible(2).then((v) => void seen.push(v))));
      });
      assert.equal(checks.length, 0, 'not signalled before the commit');
      assert.equal(await visible(2), false, 'the row is not visible yet');
      await committed.commit();
      assert.equal(checks.length, 1, 'signalled once by the commit');
      await Promise.all(checks);
      assert.deepEqual(seen, [true]);

      const rolledBack = await database.beginRequestTransaction!();
      let signalled = 0;
      await rolledBack.run(async () => {
        await database.db.execute(sql`insert into after_commit_probe values (3)`);
        afterCommit(() => (signalled += 1));
      });
      await rolledBack.rollback();
      assert.equal(signalled, 0);
      assert.equal(await visible(3), false);
    });
  }
});
