// Guards: a write that relies on facts read earlier checks them again in its own statement.
//
// A request that would read a few rows (the entity is ACTIVE, the destination is at the version
// quoted, the option is still open) only to write next to them can instead trust what this
// process saw moments ago and make each fact a condition of the write. The statement then either
// finds every fact still true and writes, or stops at the first false one (corridor_refuse,
// migration 14) and writes nothing; the caller reads the facts afresh and answers what they say.
// A guard is at least as strict as the read it replaces: a read's answer can go stale before the
// write runs, while a guard is checked by the write itself.
//
// A condition is a scalar subquery, `coalesce((select true from t where … limit 1), false)`,
// not EXISTS: under an OR, PostgreSQL made each EXISTS a hashed subplan that read every matching
// row of its table (13,160 open quote options for a batch of 8 creations, on 2026-11-26). And a
// guarded statement is planned anew for its first GUARDED_PLANNED_RUNS runs in a process
// (statement.ts, planFirstRuns): a plan kept from while the tables were nearly empty read them
// whole as they grew (11 ms for a batch of creations, against 2 ms); after that many runs a
// table the guard reads has grown past a few pages or stayed small enough to read whole, and
// autovacuum's ANALYZE has the plan made again as it grows further.
import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';

/** Runs of a guarded statement planned each time before the server may keep a plan (see above). */
export const GUARDED_PLANNED_RUNS = 200;

/** SQLSTATE of corridor_refuse(). */
export const GUARD_REFUSED = 'CG001';

/** `condition`, or the statement stops with GUARD_REFUSED naming `reason`. */
export function unless(condition: RawBuilder<boolean>, reason: string): RawBuilder<boolean> {
  if (!/^[a-z_ ]+$/.test(reason)) throw new Error(`not a guard reason: ${reason}`);
  return sql<boolean>`(${condition} or corridor_refuse(${sql.lit(reason)}))`;
}

/** Whether a statement stopped because a guarded fact no longer held. */
export const isGuardRefusal = (err: unknown): boolean => (err as { code?: string } | null)?.code === GUARD_REFUSED;
