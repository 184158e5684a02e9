// A statement built once runs with each run's values in its markers' places, on the engine the
// suite runs on (PGlite, or PostgreSQL with TEST_DATABASE_URL), and sends the same SQL every time.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Database } from './database.ts';
import { statement } from './statement.ts';
import { PLAN_EACH_RUN } from './database.ts';
import { openScratchDatabase } from '../../../test/helpers/database.ts';

describe('statement', () => {
  let db: Database;
  let close: () => Promise<void>;
  before(async () => {
    ({ db, close } = await openScratchDatabase());
    await sql`create table things (id integer primary key, kind text not null, label text)`.execute(db.kysely);
    await sql`insert into things values (1, 'a', 'one'), (2, 'b', 'two'), (3, 'a', 'three')`.execute(db.kysely);
  });
  after(() => close());

  test("a query builder's statement takes each run's values; its constants stay", async () => {
    const byKind = statement<{ kind: string; ids: number[] }, { id: number; label: string }>((v) =>
      db.kysely.selectFrom('things').select(['id', 'label']).where('kind', '=', v.kind).where(sql<boolean>`id = any(${v.ids}::int[])`).where('label', '<>', 'never').orderBy('id'),
    );
    assert.deepEqual(await byKind.run(db.kysely, { kind: 'a', ids: [1, 2, 3] }), [{ id: 1, label: 'one' }, { id: 3, label: 'three' }]);
    const text = byKind.sql;
    assert.deepEqual(await byKind.run(db.kysely, { kind: 'b', ids: [2] }), [{ id: 2, label: 'two' }]);
    assert.equal(byKind.sql, text, 'the same SQL on every run');
    assert.match(text, /\$1.*\$2.*\$3/s, 'every value is a parameter');
  });

  test('a statement planned on every run is never kept as a prepared statement (PostgreSQL)', async () => {
    const lookup = statement<{ ids: number[] }, { id: number }>((v) => sql`select id from things where id = any(${v.ids}::int[]) order by id`, { planEachRun: true });
    for (let i = 0; i < 7; i++) assert.deepEqual(await lookup.run(db.kysely, { ids: [1, 3] }), [{ id: 1 }, { id: 3 }]);
    assert.ok(lookup.sql.startsWith(PLAN_EACH_RUN));
    if (db.engine !== 'postgres') return;
    // One connection, so the prepared statements seen are the ones its runs would have made.
    await db.kysely.connection().execute(async (conn) => {
      for (let i = 0; i < 7; i++) await lookup.run(conn, { ids: [2] });
      const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(conn);
      assert.ok(!prepared.rows.some((r) => r.statement.includes('from things where id = any')), 'no prepared statement for it');
    });
  });

  test('a raw statement runs inside a transaction too, and a value may appear twice', async () => {
    const pair = statement<{ n: number }, { a: number; b: number }>((v) => sql`select ${v.n}::int as a, ${v.n}::int + 1 as b`);
    await db.kysely.transaction().execute(async (trx) => {
      assert.deepEqual(await pair.run(trx, { n: 41 }), [{ a: 41, b: 42 }]);
    });
    assert.deepEqual(await pair.run(db.kysely, { n: 1 }), [{ a: 1, b: 2 }]);
  });
});
