// Rows sent as one JSON parameter come out of json_to_recordset with the values they went in
// with, on the engine the suite runs on (PGlite, or PostgreSQL with TEST_DATABASE_URL).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Database } from './database.ts';
import { JsonText, encodeRows, insertRows, recordset } from './recordset.ts';
import { openScratchDatabase } from '../../../test/helpers/database.ts';

describe('recordset', () => {
  let db: Database;
  let close: () => Promise<void>;
  before(async () => {
    ({ db, close } = await openScratchDatabase());
    await sql`create table rows_in (id uuid primary key, amount numeric, at timestamptz(3), note text, doc jsonb, n integer)`.execute(db.kysely);
  });
  after(() => close());

  const columns = { id: 'uuid', amount: 'numeric', at: 'timestamptz', note: 'text', doc: 'jsonb', n: 'integer' } as const;

  test('money, instants, text, documents and nulls keep their values', async () => {
    const rows = [
      { id: '00000000-0000-4000-8000-000000000001', amount: '0.000000000000000001', at: new Date('2026-11-25T10:00:00.123Z'), note: 'O\'Brien "quoted" \\ back\nslash', doc: { a: [1, 'two'], b: null }, n: 7 },
      { id: '00000000-0000-4000-8000-000000000002', amount: '123456789012345678901234567890.12', at: null, note: null, doc: null, n: null },
    ];
    await sql`${insertRows('rows_in', encodeRows(rows, columns), columns)}`.execute(db.kysely);
    const { rows: back } = await sql<Record<string, unknown>>`select id, amount, at, note, doc, n, doc is null as doc_is_null from rows_in order by id`.execute(db.kysely);
    assert.deepEqual(back, [
      { ...rows[0], doc_is_null: false },
      { ...rows[1], doc_is_null: true },
    ]);
  });

  test('a JsonText document is stored as the document, not as a string', async () => {
    const text = JSON.stringify({ id: 'x', nested: { list: [1, 2, 3] }, quote: 'say "hi"' });
    const rows = [
      { id: '00000000-0000-4000-8000-000000000003', doc: new JsonText(text), note: 'with text' },
      { id: '00000000-0000-4000-8000-000000000004', doc: { plain: true }, note: 'plain' },
      { id: '00000000-0000-4000-8000-000000000005', doc: new JsonText('[]') },
    ];
    await sql`${insertRows('rows_in', encodeRows(rows, { id: 'uuid', doc: 'jsonb', note: 'text' }), { id: 'uuid', doc: 'jsonb', note: 'text' })}`.execute(db.kysely);
    const { rows: back } = await sql<{ kind: string; doc: unknown }>`select jsonb_typeof(doc) as kind, doc from rows_in where id in ('00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000005') order by id`.execute(db.kysely);
    assert.deepEqual(back, [
      { kind: 'object', doc: JSON.parse(text) },
      { kind: 'object', doc: { plain: true } },
      { kind: 'array', doc: [] },
    ]);
  });

  test('a JsonText in a text column is stored as its text, byte for byte', async () => {
    const text = '{"b": 1,"a":"x \\"y\\""}';
    await sql`${insertRows('rows_in', encodeRows([{ id: '00000000-0000-4000-8000-000000000006', note: new JsonText(text) }], { id: 'uuid', note: 'text' }), { id: 'uuid', note: 'text' })}`.execute(db.kysely);
    const { rows } = await sql<{ note: string }>`select note from rows_in where id = '00000000-0000-4000-8000-000000000006'`.execute(db.kysely);
    assert.equal(rows[0]!.note, text);
  });

  test('a recordset can be read like a table, and an empty one has no rows', async () => {
    const { rows } = await sql<{ n: number }>`select r.n from ${recordset(encodeRows([{ n: 2 }, { n: 1 }], { n: 'integer' }), { n: 'integer' }, 'r')} order by r.n`.execute(db.kysely);
    assert.deepEqual(rows, [{ n: 1 }, { n: 2 }]);
    const { rows: none } = await sql`select * from ${recordset(encodeRows([], { n: 'integer' }), { n: 'integer' }, 'r')}`.execute(db.kysely);
    assert.deepEqual(none, []);
  });

  test('column names and types are checked before they reach SQL', () => {
    assert.throws(() => recordset([], { 'n; drop table rows_in': 'integer' }, 'r'), /not a column definition/);
    assert.throws(() => recordset([], { n: "integer'" }, 'r'), /not a column definition/);
    assert.throws(() => insertRows('rows_in; --', '[]', { n: 'integer' }), /not a table/);
  });
});
