import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import type { Availability } from './adapter.ts';

export interface ProviderStatusRow {
  provider_id: string;
  status: Availability;
  reason: string | null;
  updated_by_user_id: string | null;
  updated_at: Date;
}

interface Tables {
  provider_status: WithDefaults<ProviderStatusRow, 'updated_at'>;
}

export class ProviderStatusRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  async all(): Promise<ProviderStatusRow[]> {
    return this.#db.selectFrom('provider_status').selectAll().execute();
  }

  async upsert(row: Omit<ProviderStatusRow, 'updated_at'>): Promise<ProviderStatusRow> {
    return this.#db
      .insertInto('provider_status')
      .values(row)
      .onConflict((oc) =>
        oc.column('provider_id').doUpdateSet({ status: row.status, reason: row.reason, updated_by_user_id: row.updated_by_user_id, updated_at: sql<Date>`now()` }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async remove(providerId: string): Promise<void> {
    await this.#db.deleteFrom('provider_status').where('provider_id', '=', providerId).execute();
  }
}
