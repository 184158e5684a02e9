// The database layer (issue point 3): both engines give the same JS types, migrations apply once
// (also when two processes start together on PostgreSQL), PGlite's single session is never shared
// by two callers at once, and one process owns a data dir.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { openDatabase } from './database.ts';
import type { Database } from './database.ts';
import { migrate, readMigrations } from './migrate.ts';
import { DataDirLockedError, lockDataDir, lockHolder } from './data-dir-lock.ts';
import { createTestDatabase } from '../../../test/helpers/database.ts';

const onPostgres = process.env.TEST_DATABASE_URL;
const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-db-'));
  dirs.push(d);
  return d;
};

async function postgres(): Promise<Database> {
  const database = await createTestDatabase();
  const db = await openDatabase({ url: database.url });
  cleanups.push(async () => {
    await db.close();
    await database.drop();
  });
  return db;
}

async function pglite(): Promise<Database> {
  const db = await openDatabase({ dataDir: null });
  cleanups.push(() => db.close());
  return db;
}

const SAMPLE = sql<Record<string, unknown>>`
  select 9007199254740993::int8 as big,
         count(*) as counted,
         12345678901234567890.123456789::numeric as amount,
         0.10::numeric(20, 2) as fee,
         42::int4 as small,
         1.5::float8 as ratio,
         true as flag,
         '2026-01-02T03:04:05.678Z'::timestamptz as at,
         '2026-01-02 03:04:05.678'::timestamp as local_at,
         '2026-01-02'::date as day,
         '{"a": 1, "b": [true, null]}'::jsonb as doc,
         array['x', 'y']::text[] as tags,
         '8f8a5c1e-4d4b-4a8e-9d0e-3f0a3a1c2b7d'::uuid as id,
         null::text as nothing
  from (values (1)) as v(n)`;

const EXPECTED = {
  big: '9007199254740993',
  counted: '1',
  amount: '12345678901234567890.123456789',
  fee: '0.10',
  small: 42,
  ratio: 1.5,
  flag: true,
  at: new Date('2026-01-02T03:04:05.678Z'),
  local_at: new Date('2026-01-02T03:04:05.678Z'),
  day: '2026-01-02',
  doc: { a: 1, b: [true, null] },
  tags: ['x', 'y'],
  id: '8f8a5c1e-4d4b-4a8e-9d0e-3f0a3a1c2b7d',
  nothing: null,
};

describe('type parsing', () => {
  test('PGlite: bigints and numerics are exact strings, timestamps are Dates', async () => {
    const db = await pglite();
    const { rows } = await SAMPLE.execute(db.kysely);
    assert.deepEqual(rows[0], EXPECTED);
  });

  test('PostgreSQL gives exactly the same values and types', { skip: !onPostgres && 'set TEST_DATABASE_URL' }, async () => {
    const db = await postgres();
    const { rows } = await SAMPLE.execute(db.kysely);
    assert.deepEqual(rows[0], EXPECTED);
  });
});

describe('migrations', () => {
  test('apply once, in order, recorded in schema_migrations', async () => {
    const db = onPostgres ? await postgres() : await pglite();
    const all = readMigrations().map((m) => m.version);
    assert.deepEqual(all, [...all].sort((a, b) => a - b));
    assert.equal(new Set(all).size, all.length, 'each migration number is used once');
    assert.deepEqual(await migrate(db), all);
    assert.deepEqual(await migrate(db), [], 'a second start applies nothing');
    const recorded = await db.kysely.selectFrom('schema_migrations').select('version').orderBy('version').execute();
    assert.deepEqual(recorded.map((r) => r.version), all);
  });

  test('a failing migration names itself and leaves nothing half-applied', async () => {
    const db = await pglite();
    const broken = [{ version: 999_001, name: '999001-broken.sql', script: 'CREATE TABLE half_done (id int); SELECT no_such_function();' }];
    await assert.rejects(migrate(db, broken), /Migration 999001-broken\.sql failed/);
    const { rows } = await sql<{ t: string | null }>`select to_regclass('half_done')::text as t`.execute(db.kysely);
    assert.equal(rows[0]!.t, null);
  });

  test('two processes starting together on PostgreSQL apply each migration once', { skip: !onPostgres && 'set TEST_DATABASE_URL' }, async () => {
    const database = await createTestDatabase();
    const a = await openDatabase({ url: database.url });
    const b = await openDatabase({ url: database.url });
    try {
      const [fromA, fromB] = await Promise.all([migrate(a), migrate(b)]);
      const all = readMigrations().map((m) => m.version);
      assert.deepEqual([...fromA, ...fromB].sort((x, y) => x - y), all);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });
});

describe('prepared statements on PostgreSQL', () => {
  test('a table changed by another process (a newer migration) is read with its new columns, not an error', { skip: !onPostgres && 'set TEST_DATABASE_URL' }, async () => {
    const db = await postgres();
    const other = await openDatabase({ url: db.url! });
    cleanups.unshift(() => other.close());
    await sql`create table prepared_probe (id int primary key)`.execute(db.kysely);
    await sql`insert into prepared_probe values (1)`.execute(db.kysely);
    const read = () => db.kysely.selectFrom('prepared_probe').selectAll().where('id', '=', 1).execute();
    // Enough runs for the server to settle on its cached plan for the prepared statement.
    for (let i = 0; i < 7; i++) assert.deepEqual(await read(), [{ id: 1 }]);
    await sql`alter table prepared_probe add column note text not null default 'added'`.execute(other.kysely);
    assert.deepEqual(await read(), [{ id: 1, note: 'added' }]);
    assert.deepEqual(await read(), [{ id: 1, note: 'added' }]);
  });
});

describe('the single PGlite session', () => {
  test("a query issued while another caller's transaction is open never runs inside it", async () => {
    const db = await pglite();
    await sql`create table session_probe (id int)`.execute(db.kysely);
    let inserted!: () => void;
    const insertedYet = new Promise<void>((r) => (inserted = r));
    const abandoned = db.kysely.transaction().execute(async (trx) => {
      await sql`insert into session_probe values (1)`.execute(trx);
      inserted();
      await new Promise((r) => setTimeout(r, 50));
      throw new Error('rolled back');
    });
    await insertedYet;
    const count = sql<{ n: string }>`select count(*) as n from session_probe`.execute(db.kysely);
    await assert.rejects(abandoned, /rolled back/);
    assert.equal((await count).rows[0]!.n, '0', 'the outside query saw neither the row nor the rollback');
  });
});

describe('data-dir lock', () => {
  test('a second lock on the same directory is refused, in this process and from another live process', async () => {
    const dir = tempDir();
    const release = lockDataDir(dir);
    assert.throws(() => lockDataDir(dir), DataDirLockedError);
    release();
    const again = lockDataDir(dir);
    again();

    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(path.join(dir, 'corridor.lock.1'), String(sleeper.pid));
      assert.throws(() => lockDataDir(dir), (err: Error) => err instanceof DataDirLockedError && err.message.includes(`in use by another Corridor process (pid ${sleeper.pid})`));
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  test('a lock left by a dead process is taken over', async () => {
    const dir = tempDir();
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((r) => dead.on('exit', r));
    fs.writeFileSync(path.join(dir, 'corridor.lock.1'), String(dead.pid));
    const release = lockDataDir(dir);
    assert.equal(lockHolder(dir), process.pid);
    release();
    assert.equal(lockHolder(dir), null);
    assert.deepEqual(fs.readdirSync(dir), [], 'the stale lock was swept with ours');

    // Releasing after the directory was deleted under the process does not throw.
    const gone = tempDir();
    const releaseGone = lockDataDir(gone);
    fs.rmSync(gone, { recursive: true });
    releaseGone();
  });

  test('processes starting together, on a fresh directory or on a crashed process\'s lock, end with exactly one owner', async () => {
    const child = path.resolve(import.meta.dirname, '../../../test/fixtures/lock-data-dir.ts');
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((r) => dead.on('exit', r));
    for (let round = 0; round < 8; round++) {
      const dir = tempDir();
      // All rounds but the first start from a stale lock: every process sees it and wants to take it over.
      if (round > 0) fs.writeFileSync(path.join(dir, 'corridor.lock.1'), String(dead.pid));
      const at = Date.now() + 1500;
      const children = [0, 1, 2, 3, 4, 5].map(() => spawn(process.execPath, [child, dir, String(at)], { stdio: ['pipe', 'pipe', 'inherit'] }));
      const exited = children.map((p) => new Promise((r) => p.on('exit', r)));
      const outcomes = await Promise.all(
        children.map(
          (p) =>
            new Promise<string>((resolve) => {
              let out = '';
              p.stdout.on('data', (c: Buffer) => {
                out += c.toString();
                if (out.endsWith('\n')) resolve(out.trim());
              });
              p.on('exit', () => resolve(out.trim()));
            }),
        ),
      );
      // Only now may the owner let go: every other process has tried while it held the lock.
      for (const p of children) p.stdin.end();
      await Promise.all(exited);
      assert.deepEqual(outcomes.sort(), ['LOCKED', 'REFUSED', 'REFUSED', 'REFUSED', 'REFUSED', 'REFUSED'], `round ${round}`);
    }
  });
});

describe('a PostgreSQL connection lost mid-transaction', () => {
  test('fails that transaction and nothing else: no uncaught error takes the process down', { skip: !onPostgres && 'set TEST_DATABASE_URL' }, async () => {
    const db = await postgres();
    const killer = await postgres();
    let pid = 0;
    const lost = db.kysely.transaction().execute(async (trx) => {
      pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
      // Between two statements the client is checked out but idle: the moment a failover or an
      // administrator's pg_terminate_backend hits.
      await sql`select pg_terminate_backend(${pid})`.execute(killer.kysely);
      await new Promise((r) => setTimeout(r, 300));
      await sql`select 1`.execute(trx);
    });
    await assert.rejects(lost);
    // The pool replaced the dead connection; the database is usable again.
    assert.equal((await sql<{ n: number }>`select 1 as n`.execute(db.kysely)).rows[0]!.n, 1);
  });
});
