// one backend: postgres: the embedded database prepares every statement by its text already (test/storage/pglite-prepared.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { ShapedStatements } from '../../src/storage/named-statement.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { openFreshStore, type FreshStore } from '../helpers/fresh-database.ts';

/*
 * Statements built per request whose text is their shape (docs/performance.md, "Filtered listings
 * planned once"): each shape is prepared once per connection under a name of its own and its
 * plan kept, with every value a parameter; past the limit of shapes they run unnamed, and
 * answer the same.
 */
describe('statements named after their shape', () => {
  let fresh: FreshStore;
  // One connection, so that this session's prepared statements are the pool's.
  before(async () => {
    fresh = await openFreshStore(1);
    await fresh.database.db.execute(sql`create table shapes (id int primary key, tag text not null)`);
    await fresh.database.db.execute(sql`insert into shapes select g, 'tag' || (g % 10) from generate_series(1, 1000) g`);
  });
  after(() => fresh.close());

  const prepared = async () =>
    rowsOf<{ name: string; statement: string; plans: number | string }>(
      await fresh.database.db.execute(sql`select name, statement, generic_plans + custom_plans as plans from pg_prepared_statements
        where name like 'wum_shape_%' order by name`),
    );

  test('one shape with other values each time is one prepared statement, run each time; a new shape another', async () => {
    const shaped = new ShapedStatements(8);
    const byTag = (tag: string) => sql`select count(*)::int as n from shapes where tag = ${tag} and id > ${0}`;
    for (let i = 0; i < 7; i += 1) {
      const [row] = await shaped.run<{ n: number }>(fresh.database.db, byTag(`tag${i}`));
      assert.equal(row!.n, 100);
    }
    const [byId] = await shaped.run<{ tag: string }>(fresh.database.db, sql`select tag from shapes where id = ${42}`);
    assert.equal(byId!.tag, 'tag2');
    const statements = await prepared();
    assert.equal(statements.length, 2);
    const counted = statements.find((s) => s.statement.includes('count(*)'));
    assert.equal(Number(counted!.plans), 7, 'every run used the prepared statement');
    assert.ok(!counted!.statement.includes('tag6'), 'the values are parameters, not in the text');
  });

  test('past its limit of shapes a statement runs unnamed and answers the same', async () => {
    const before = (await prepared()).length;
    const shaped = new ShapedStatements(2);
    const shapes = [
      sql`select ${1}::int + id as n from shapes where id = ${1}`,
      sql`select ${2}::int * id as n from shapes where id = ${2}`,
      sql`select ${3}::int - id as n from shapes where id = ${3}`,
    ];
    const answers = [];
    for (const shape of shapes) answers.push((await shaped.run<{ n: number }>(fresh.database.db, shape))[0]!.n);
    assert.deepEqual(answers, [2, 4, 0]);
    assert.equal((await prepared()).length, before + 2, 'only the first two shapes were named');
  });
});
