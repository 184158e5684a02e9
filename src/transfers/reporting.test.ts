// The whole-report cursor formats event timestamps itself instead of asking PostgreSQL's to_char:
// the two must agree to the character.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { isoFromPgUtc } from './reporting.ts';

test('PostgreSQL text with 0 to 3 fraction digits becomes ISO 8601 with milliseconds', () => {
  assert.equal(isoFromPgUtc('2026-03-01 00:00:01+00'), '2026-03-01T00:00:01.000Z');
  assert.equal(isoFromPgUtc('2026-03-01 00:00:01.5+00'), '2026-03-01T00:00:01.500Z');
  assert.equal(isoFromPgUtc('2026-03-01 00:00:01.05+00'), '2026-03-01T00:00:01.050Z');
  assert.equal(isoFromPgUtc('2026-12-31 23:59:59.999+00'), '2026-12-31T23:59:59.999Z');
});

test('text in any other shape is refused rather than guessed at', () => {
  for (const text of ['2026-03-01 00:00:01+01', '2026-03-01T00:00:01Z', '03/01/2026 00:00:01 UTC', '']) {
    assert.throws(() => isoFromPgUtc(text), /unexpected timestamp text/);
  }
});

let t: TestServer;
before(async () => {
  t = await startTestServer({}, { workers: false });
});
after(async () => {
  await t?.close();
});

test("agrees with to_char on this database for every millisecond pattern, in a session set to UTC", async () => {
  const { rows } = await t.server.db.kysely.transaction().execute(async (trx) => {
    await sql`SET LOCAL TimeZone = 'UTC'`.execute(trx);
    await sql`SET LOCAL DateStyle = 'ISO'`.execute(trx);
    return sql<{ text: string; expected: string }>`
      SELECT v::text AS text, to_char(v AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expected
      FROM (SELECT ('2026-01-01 00:00:00+00'::timestamptz + g * interval '1 millisecond' + g * interval '1 hour')::timestamp(3) with time zone AS v
            FROM generate_series(0, 999) g) s`.execute(trx);
  });
  assert.equal(rows.length, 1000);
  for (const row of rows) assert.equal(isoFromPgUtc(row.text), row.expected);
});
