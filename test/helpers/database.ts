// Each test file gets its own database: a fresh in-memory PGlite by default, or a fresh database
// on the PostgreSQL server named by TEST_DATABASE_URL (created here, dropped on close).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../../src/platform/db/database.ts';
import type { Database } from '../../src/platform/db/database.ts';

export interface TestDatabase {
  /** Connection string for the server database, or null for embedded PGlite. */
  url: string | null;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) return { url: null, drop: async () => {} };
  const name = `corridor_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * A database opened on the engine the suite runs on (a fresh PGlite in memory, or a fresh database
 * on TEST_DATABASE_URL), with no migrations: for tests of the database layer itself. `close`
 * closes it and drops the server database.
 */
export async function openScratchDatabase(): Promise<{ db: Database; close: () => Promise<void> }> {
  const database = await createTestDatabase();
  const db = await openDatabase({ url: database.url });
  return {
    db,
    close: async () => {
      await db.close();
      await database.drop();
    },
  };
}
