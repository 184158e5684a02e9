import { sql } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import type { FundingInstructions } from './instructions.ts';
import type { ProofContentType } from './proof-files.ts';

export const SESSION_STATUSES = ['ACTIVE', 'EXPIRED', 'COMPLETED'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

export interface FundingSessionRow {
  id: string;
  organization_id: string;
  transfer_id: string;
  status: SessionStatus;
  reference: string;
  deposit_key: string;
  instructions: FundingInstructions;
  expires_at: Date;
  closed_at: Date | null;
  created_at: Date;
}

export interface FundingProofRow {
  id: string;
  organization_id: string;
  transfer_id: string;
  funding_session_id: string | null;
  file_name: string;
  content_type: ProofContentType;
  size_bytes: number;
  sha256: string;
  storage_path: string;
  uploaded_by_user_id: string | null;
  uploaded_by_api_key_id: string | null;
  uploaded_at: Date;
}

interface Tables {
  funding_sessions: WithDefaults<FundingSessionRow, 'created_at' | 'closed_at'>;
  funding_proofs: WithDefaults<FundingProofRow, 'uploaded_at'>;
}

type Db = Kysely<any> | Transaction<any>;
const t = (db: Db) => db as Kysely<Tables>;
// Written into the SQL, not sent as a parameter: a prepared statement's generic plan can then use
// the partial indexes of active sessions (one per transfer; the due ones by expiry).
const ACTIVE = sql.lit<'ACTIVE'>('ACTIVE');

export class FundingRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  /**
   * Serializes funding work on one transfer (opening, expiring) for the rest of the transaction,
   * so two simultaneous requests cannot both decide that no session is open.
   */
  async lockTransfer(trx: Transaction<any>, transferId: string): Promise<void> {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`funding:${transferId}`}, 0))`.execute(trx);
  }

  async findActive(transferId: string, db: Db = this.#db): Promise<FundingSessionRow | undefined> {
    return t(db).selectFrom('funding_sessions').selectAll().where('transfer_id', '=', transferId).where('status', '=', ACTIVE).executeTakeFirst();
  }

  async findActiveInOrganization(organizationId: string, transferId: string, db: Db = this.#db): Promise<FundingSessionRow | undefined> {
    return t(db)
      .selectFrom('funding_sessions')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('transfer_id', '=', transferId)
      .where('status', '=', ACTIVE)
      .executeTakeFirst();
  }

  /**
   * Inserts a session unless its reference or deposit coordinates were ever handed out before
   * (or the transfer already has an open session): then nothing is written and undefined comes
   * back, so the caller draws new instructions. ON CONFLICT keeps the transaction usable on
   * PostgreSQL, where a failed insert would abort it.
   */
  async insertSession(trx: Transaction<any>, row: Omit<FundingSessionRow, 'closed_at'>): Promise<FundingSessionRow | undefined> {
    return t(trx)
      .insertInto('funding_sessions')
      .values({ ...row, instructions: JSON.stringify(row.instructions) as never })
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
  }

  async close(trx: Transaction<any>, id: string, status: Exclude<SessionStatus, 'ACTIVE'>, at: Date): Promise<boolean> {
    const result = await t(trx)
      .updateTable('funding_sessions')
      .set({ status, closed_at: at })
      .where('id', '=', id)
      .where('status', '=', 'ACTIVE')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Open sessions whose time ran out, oldest first. */
  async listDue(now: Date, limit: number): Promise<Array<Pick<FundingSessionRow, 'id' | 'organization_id' | 'transfer_id'>>> {
    return this.#db
      .selectFrom('funding_sessions')
      .select(['id', 'organization_id', 'transfer_id'])
      .where('status', '=', ACTIVE)
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
  }

  async findSession(id: string, db: Db = this.#db): Promise<FundingSessionRow | undefined> {
    return t(db).selectFrom('funding_sessions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insertProof(row: Omit<FundingProofRow, 'uploaded_at'>): Promise<FundingProofRow> {
    return this.#db.insertInto('funding_proofs').values(row).returningAll().executeTakeFirstOrThrow();
  }
}
