// one backend: pglite
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { openDatabase, type OpenDatabase } from '../../src/storage/database.ts';
import { NamedStatement, ph } from '../../src/storage/named-statement.ts';
import { memoryDatabase } from '../helpers/test-context.ts';

/** The names of the statements prepared in the embedded database's session. */
async function preparedNames(database: OpenDatabase): Promise<string[]> {
  const result = (await database.db.execute(sql`select name from pg_prepared_statements order by name`)) as unknown as { rows: Array<{ name: string }> };
  return result.rows.map((r) => r.name);
}

const insertNote = new NamedStatement(
  'test_note_insert',
  () => sql`insert into notes (id, body, at) values (${ph('id')}::int, ${ph('body')}::text, ${ph('at')}::timestamptz) returning id, body, at`,
);
const noteById = new NamedStatement('test_note_by_id', () => sql`select id, body, at from notes where id = ${ph('id')}::int`);

describe('prepared statements on the embedded database', () => {
  let database: OpenDatabase;
  before(async () => {
    database = await openDatabase(memoryDatabase());
    await database.db.execute(sql`create table notes (id int primary key, body text not null, at timestamptz)`);
  });
  after(() => database.close());

  test('a statement is prepared once under its name and answers rows as a plain query does', async () => {
    const [row] = await insertNote.run<{ id: number; body: string; at: string }>(database.db, { id: 1, body: 'first', at: new Date('2026-01-02T03:04:05.678Z') });
    const [again] = await noteById.run<{ id: number; body: string; at: string }>(database.db, { id: 1 });
    await noteById.run(database.db, { id: 1 });
    // Timestamps stay text, as Drizzle's PGlite driver answers a raw statement.
    assert.deepEqual(row, { id: 1, body: 'first', at: '2026-01-02 03:04:05.678+00' });
    assert.deepEqual(again, row);
    const names = await preparedNames(database);
    assert.deepEqual(names.filter((n) => n.startsWith('test_note')), ['test_note_by_id', 'test_note_insert']);
  });

  test('a failed statement reports the driver error: a unique violation keeps its code and constraint', async () => {
    await assert.rejects(
      () => insertNote.run(database.db, { id: 1, body: 'duplicate', at: null }),
      (error: unknown) => {
        const cause = (error as { cause?: { code?: string; constraint?: string } }).cause;
        assert.equal(cause?.code, '23505');
        assert.equal(cause?.constraint, 'notes_pkey');
        return true;
      },
    );
    // Nothing half-done: the next statement runs, and the row is the first one.
    const [row] = await noteById.run<{ body: string }>(database.db, { id: 1 });
    assert.equal(row?.body, 'first');
  });

  test('inside a transaction it runs in that transaction: rolled back with it', async () => {
    await assert.rejects(
      database.db.transaction(async (tx) => {
        await insertNote.run(tx, { id: 2, body: 'in a transaction', at: null });
        const [seen] = await noteById.run<{ body: string }>(tx, { id: 2 });
        assert.equal(seen?.body, 'in a transaction');
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual(await noteById.run(database.db, { id: 2 }), []);
  });

  test('a query builder statement is prepared by its text: once, then reused, its rows as the builder reads them', async () => {
    const notes = pgTable('notes', { id: integer('id').primaryKey(), body: text('body').notNull(), at: timestamp('at', { withTimezone: true, mode: 'string' }) });
    await preparedNames(database); // its own look-up prepared before counting
    const before = (await preparedNames(database)).filter((n) => n.startsWith('wum_text_')).length;
    const first = await database.db.select().from(notes).where(eq(notes.id, 1));
    const second = await database.db.select().from(notes).where(eq(notes.id, 1));
    assert.deepEqual(first, [{ id: 1, body: 'first', at: '2026-01-02 03:04:05.678+00' }]);
    assert.deepEqual(second, first);
    const after = (await preparedNames(database)).filter((n) => n.startsWith('wum_text_')).length;
    // One more, for the select, whichever of the two ran it.
    assert.equal(after - before, 1);
    // Without options a statement reads as PGlite's own query does (timestamps as Date).
    const client = (database.db._.session as unknown as { client: { query(t: string, p: unknown[]): Promise<{ rows: Array<{ at: unknown }> }> } }).client;
    const [row] = (await client.query('select at from notes where id = $1', [1])).rows;
    assert.ok(row?.at instanceof Date);
  });

  test('statements prepared by text are bounded: the least recently used are closed', async () => {
    for (let i = 0; i < 520; i += 1) {
      const result = (await database.db.execute(sql.raw(`select ${i}::int as n`))) as unknown as { rows: Array<{ n: number }> };
      assert.deepEqual(result.rows, [{ n: i }]);
    }
    const byText = (await preparedNames(database)).filter((n) => n.startsWith('wum_text_'));
    assert.ok(byText.length <= 500, `${byText.length} statements prepared by text`);
    assert.ok(byText.length >= 450, `${byText.length} statements prepared by text`);
  });

  test('outside a transaction it waits for an open one: it never runs inside another caller’s transaction', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedInTx = new Promise<void>((resolve) => (inserted = resolve));
    const transaction = database.db.transaction(async (tx) => {
      await insertNote.run(tx, { id: 3, body: 'held', at: null });
      inserted();
      await held;
      throw new Error('roll back');
    });
    await insertedInTx;
    let outsideDone = false;
    const outside = insertNote.run(database.db, { id: 4, body: 'outside', at: null }).then(() => (outsideDone = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(outsideDone, false, 'the statement outside waited for the open transaction');
    release();
    await assert.rejects(transaction, /roll back/);
    await outside;
    // Had it run inside the transaction, the rollback would have taken its row too.
    assert.deepEqual(
      (await noteById.run<{ id: number }>(database.db, { id: 4 })).map((r) => r.id),
      [4],
    );
    assert.deepEqual(await noteById.run(database.db, { id: 3 }), []);
  });
});
