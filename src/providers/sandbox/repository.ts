import { sql } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import type { WithDefaults } from '../../platform/db/types.ts';
import { encodeRows, insertRows } from '../../platform/db/recordset.ts';
import { statement } from '../../platform/db/statement.ts';
import type { LegKind, LegStatus } from '../adapter.ts';

export type SandboxOutcome = 'SUCCEED' | 'FAIL' | 'RETURN';

export interface SandboxLegRow {
  provider_reference: string;
  provider_id: string;
  leg_id: string;
  transfer_id: string;
  kind: LegKind;
  from_asset: string;
  to_asset: string;
  amount: string;
  amount_out: string | null;
  rate: string | null;
  sandbox_outcome: SandboxOutcome;
  stage_index: number;
  progress_stage: string;
  status: LegStatus;
  reason: string | null;
  raw_payload: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

interface Tables {
  sandbox_provider_legs: WithDefaults<SandboxLegRow, 'created_at' | 'updated_at' | 'stage_index' | 'raw_payload' | 'amount_out' | 'reason'>;
}

/** A leg as a hand-off stores it. */
export type NewSandboxLeg = Omit<SandboxLegRow, 'created_at' | 'updated_at' | 'amount_out' | 'reason'>;

const NEW_LEG_COLUMNS = {
  provider_reference: 'text',
  provider_id: 'text',
  leg_id: 'text',
  transfer_id: 'text',
  kind: 'text',
  from_asset: 'text',
  to_asset: 'text',
  amount: 'numeric',
  rate: 'text',
  sandbox_outcome: 'text',
  stage_index: 'integer',
  progress_stage: 'text',
  status: 'text',
  raw_payload: 'jsonb',
} as const;

// One statement text for any number of legs (a setup batch hands off many at once): prepared once,
// where a multi-row VALUES list was a new statement for each batch size, parsed and planned anew.
const INSERT_LEGS_ONCE = statement<{ rows: string }, SandboxLegRow>(
  (v) => sql`${insertRows('sandbox_provider_legs', v.rows, NEW_LEG_COLUMNS)} on conflict (provider_id, leg_id) do nothing returning *`,
);

export type SandboxLegUpdate = Pick<SandboxLegRow, 'stage_index' | 'progress_stage' | 'status' | 'reason' | 'amount_out' | 'raw_payload'>;

export class SandboxLegRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  /**
   * Inserts each leg unless this provider already carries the same leg id (a hand-off made
   * again); returns the stored rows, the earlier ones for legs already there.
   */
  async insertManyOnce(rows: NewSandboxLeg[]): Promise<SandboxLegRow[]> {
    if (!rows.length) return [];
    const inserted = await INSERT_LEGS_ONCE.run(this.#db, { rows: encodeRows(rows, NEW_LEG_COLUMNS) });
    if (inserted.length === rows.length) return inserted;
    const fresh = new Set(inserted.map((row) => `${row.provider_id}/${row.leg_id}`));
    const earlier = rows.filter((row) => !fresh.has(`${row.provider_id}/${row.leg_id}`));
    const found = await this.#db
      .selectFrom('sandbox_provider_legs')
      .selectAll()
      .where((eb) => eb.or(earlier.map((row) => eb.and([eb('provider_id', '=', row.provider_id), eb('leg_id', '=', row.leg_id)]))))
      .execute();
    return [...inserted, ...found];
  }

  async find(providerId: string, reference: string): Promise<SandboxLegRow | undefined> {
    return this.#db
      .selectFrom('sandbox_provider_legs')
      .selectAll()
      .where('provider_id', '=', providerId)
      .where('provider_reference', '=', reference)
      .executeTakeFirst();
  }

  /** Runs `step` on the locked row and stores what it returns, in one transaction. */
  async update(
    providerId: string,
    reference: string,
    step: (row: SandboxLegRow) => SandboxLegUpdate | null,
  ): Promise<SandboxLegRow | undefined> {
    return this.#db.transaction().execute(async (trx: Transaction<Tables>) => {
      const row = await trx
        .selectFrom('sandbox_provider_legs')
        .selectAll()
        .where('provider_id', '=', providerId)
        .where('provider_reference', '=', reference)
        .forUpdate()
        .executeTakeFirst();
      if (!row) return undefined;
      const change = step(row);
      if (!change) return row;
      return trx
        .updateTable('sandbox_provider_legs')
        .set({ ...change, raw_payload: JSON.stringify(change.raw_payload) as never, updated_at: sql<Date>`now()` })
        .where('provider_reference', '=', reference)
        .returningAll()
        .executeTakeFirstOrThrow();
    });
  }
}
