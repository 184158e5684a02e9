// SQL of the ledger. Amounts leave the database as decimal strings (numeric) and are summed in
// SQL as numeric, so no float ever sees them.
import { sql } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import { newId } from '../platform/ids.ts';

export interface LedgerEntryRow {
  id: string;
  entry_key: string;
  organization_id: string;
  transfer_id: string | null;
  kind: string;
  description: string;
  created_at: Date;
}

export interface LedgerPostingRow {
  id: string;
  entry_id: string;
  organization_id: string;
  transfer_id: string | null;
  account: string;
  currency: string;
  amount: string;
  created_at: Date;
}

export interface LedgerTables {
  ledger_entries: WithDefaults<LedgerEntryRow, 'created_at'>;
  ledger_postings: WithDefaults<LedgerPostingRow, 'created_at'>;
}

export interface BalanceRow {
  account: string;
  currency: string;
  balance: string;
}

type Db = Kysely<LedgerTables> | Transaction<LedgerTables>;

export class LedgerRepository {
  readonly #db: Kysely<LedgerTables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  /** Inserts the entry and its postings unless an entry with this key exists; false when it did. */
  async insertEntry(
    trx: Transaction<any>,
    entry: Omit<LedgerEntryRow, 'id' | 'created_at'>,
    postings: Array<Pick<LedgerPostingRow, 'account' | 'currency' | 'amount'>>,
  ): Promise<boolean> {
    const db = trx as Transaction<LedgerTables>;
    const id = newId();
    const inserted = await db
      .insertInto('ledger_entries')
      .values({ id, ...entry })
      .onConflict((oc) => oc.column('entry_key').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return false;
    await db
      .insertInto('ledger_postings')
      .values(postings.map((p) => ({ id: newId(), entry_id: id, organization_id: entry.organization_id, transfer_id: entry.transfer_id, ...p })))
      .execute();
    return true;
  }

  /** Balance per account and currency of one transfer's postings. */
  async transferBalances(transferId: string, trx?: Transaction<any>): Promise<BalanceRow[]> {
    const db: Db = (trx as Transaction<LedgerTables> | undefined) ?? this.#db;
    return db
      .selectFrom('ledger_postings')
      .select(['account', 'currency', sql<string>`sum(amount)::text`.as('balance')])
      .where('transfer_id', '=', transferId)
      .groupBy(['account', 'currency'])
      .orderBy('account')
      .orderBy('currency')
      .execute();
  }

  /** Balance per account and currency, optionally for one organization. */
  async balances(organizationId?: string): Promise<BalanceRow[]> {
    let q = this.#db.selectFrom('ledger_postings').select(['account', 'currency', sql<string>`sum(amount)::text`.as('balance')]);
    if (organizationId) q = q.where('organization_id', '=', organizationId);
    return q.groupBy(['account', 'currency']).orderBy('account').orderBy('currency').execute();
  }

  async entries(transferId: string): Promise<Array<LedgerEntryRow & { postings: LedgerPostingRow[] }>> {
    const entries = await this.#db.selectFrom('ledger_entries').selectAll().where('transfer_id', '=', transferId).orderBy('created_at').orderBy('entry_key').execute();
    if (!entries.length) return [];
    const postings = await this.#db.selectFrom('ledger_postings').selectAll().where('entry_id', 'in', entries.map((e) => e.id)).execute();
    return entries.map((e) => ({ ...e, postings: postings.filter((p) => p.entry_id === e.id) }));
  }
}
