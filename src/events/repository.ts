import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import { encodeRows, insertRows } from '../platform/db/recordset.ts';
import type { StatementPart } from '../platform/db/recordset.ts';
import { statement } from '../platform/db/statement.ts';

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

const EVENT_COLUMNS = { id: 'uuid', organization_id: 'uuid', type: 'text', data: 'jsonb', created_at: 'timestamptz' } as const;
const insertEvents = (rows: unknown) => insertRows('events', rows, EVENT_COLUMNS);
const INSERT_EVENTS = statement<{ rows: string }, unknown>((v) => insertEvents(v.rows));

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

  /** Several events in one statement, in the caller's transaction. */
  async insertMany(db: Kysely<any>, rows: Array<NewEventRow & { created_at: Date }>): Promise<void> {
    if (!rows.length) return;
    await INSERT_EVENTS.run(db, { rows: encodeRows(rows, EVENT_COLUMNS) });
  }

  /** The insert of these events as a part of the caller's statement. */
  insertPart(rows: Array<NewEventRow & { created_at: Date }>): StatementPart {
    return { name: 'events', rows: encodeRows(rows, EVENT_COLUMNS), sql: insertEvents };
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
