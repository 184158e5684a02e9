import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';

export interface EventRow {
  id: string;
  sequence: string;
  organization_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  transaction_id: string;
}

interface Tables {
  events: WithDefaults<EventRow, 'sequence' | 'created_at' | 'transaction_id'>;
}

export interface NewEventRow {
  id: string;
  organization_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at?: Date;
}

/** Where a reader stands in an organization's event stream. */
export interface StreamPosition {
  transactionId: string;
  sequence: string;
}

// Only events written by transactions older than every transaction still running are readable
// in order: see migrations/000008-webhooks.sql for why a plain sequence cursor can skip events.
const settled = sql<boolean>`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`;

export class EventRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  /** Several events in one statement; answers each one's created_at, in the order given. */
  async insertMany(db: Kysely<any>, rows: NewEventRow[]): Promise<Date[]> {
    if (!rows.length) return [];
    const inserted = await (db as Kysely<Tables>)
      .insertInto('events')
      .values(rows.map((row) => ({ ...row, data: JSON.stringify(row.data) as never })))
      .returning(['id', 'created_at'])
      .execute();
    const createdAt = new Map(inserted.map((r) => [r.id, r.created_at]));
    return rows.map((row) => createdAt.get(row.id)!);
  }

  async find(organizationId: string, id: string): Promise<EventRow | undefined> {
    return this.#db.selectFrom('events').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  }

  async position(organizationId: string, id: string): Promise<StreamPosition | null> {
    const row = await this.#db
      .selectFrom('events')
      .select(['transaction_id', 'sequence'])
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? { transactionId: row.transaction_id, sequence: row.sequence } : null;
  }

  /** Settled events after the position, in stream order, plus how many there are in all. */
  async listAfter(organizationId: string, after: StreamPosition | null, limit: number): Promise<{ rows: EventRow[]; total: number }> {
    let q = this.#db.selectFrom('events').where('organization_id', '=', organizationId).where(settled);
    if (after) q = q.where(sql<boolean>`(transaction_id, sequence) > (${after.transactionId}::xid8, ${after.sequence}::bigint)`);
    const rows = await q.selectAll().orderBy('transaction_id').orderBy('sequence').limit(limit + 1).execute();
    const count = await q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    return { rows, total: Number(count.n) };
  }
}
