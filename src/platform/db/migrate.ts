// Forward-only migrations: numbered plain SQL files in /migrations, applied in order at start,
// each in its own transaction together with its bookkeeping row.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { Database } from './database.ts';

export const MIGRATIONS_DIR = path.resolve(import.meta.dirname, '../../../migrations');
// Any constant works; it only has to be the same for every Corridor process on one server.
const MIGRATION_LOCK_KEY = 7_302_118_431;

export interface Migration {
  version: number;
  name: string;
  script: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{6}(-[\w-]+)?\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 6)),
      name: file,
      script: fs.readFileSync(path.join(dir, file), 'utf8'),
    }));
}

export async function migrate(db: Database, migrations = readMigrations()): Promise<number[]> {
  const applied: number[] = [];
  // Under the same lock as the migrations: two servers creating the table at once would
  // otherwise collide in the catalog even with IF NOT EXISTS.
  await db.execScript(`
    SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY});
    CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    );`);
  for (const m of migrations) {
    // On PostgreSQL several processes may start at once; the advisory lock makes them take turns
    // and the version check inside the same transaction makes the loser skip what the winner did.
    const guarded = `
      SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY});
      DO $corridor$ BEGIN
        IF EXISTS (SELECT 1 FROM schema_migrations WHERE version = ${m.version}) THEN
          RAISE EXCEPTION 'corridor:already-applied';
        END IF;
      END $corridor$;
      ${m.script}
      ;
      INSERT INTO schema_migrations (version, name) VALUES (${m.version}, '${m.name.replace(/'/g, "''")}');`;
    const done = await sql<{ n: number }>`select count(*)::int as n from schema_migrations where version = ${m.version}`.execute(db.kysely);
    if (done.rows[0]!.n > 0) continue;
    try {
      await db.execScript(guarded);
      applied.push(m.version);
    } catch (err) {
      if (String((err as Error).message).includes('corridor:already-applied')) continue;
      throw new Error(`Migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
    }
  }
  return applied;
}
