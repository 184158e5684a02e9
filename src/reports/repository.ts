// The reports table. Lease times are computed by the database clock, so processes on different
// machines agree on when a lease has lapsed.
import { sql } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import type { DetailLevel, FailureCode, NormalizedFilters, ReportFormat, ReportStatus, ReportType } from './schemas.ts';
import { movableTo } from './states.ts';

export interface ReportRow {
  id: string;
  organization_id: string;
  status: ReportStatus;
  schema_version: string;
  profile_version: string;
  type: ReportType;
  format: ReportFormat;
  detail_level: DetailLevel;
  filters: NormalizedFilters;
  error_code: FailureCode | null;
  error_message: string | null;
  created_by_user_id: string | null;
  created_by_api_key_id: string | null;
  attempts: number;
  lease_token: string | null;
  lease_expires_at: Date | null;
  artifact_key: string | null;
  artifact_content_type: string | null;
  artifact_size_bytes: string | null;
  artifact_sha256: string | null;
  artifact_row_count: string | null;
  artifact_expires_at: Date | null;
  artifact_deleted_at: Date | null;
  created_at: Date;
  generated_at: Date | null;
  updated_at: Date;
}

interface Tables {
  reports: WithDefaults<ReportRow, 'attempts' | 'created_at' | 'updated_at'>;
}

export interface ArtifactRecord {
  key: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  rowCount: number;
  expiresAt: Date;
}

export type NewReport = Pick<
  ReportRow,
  'id' | 'organization_id' | 'profile_version' | 'type' | 'format' | 'detail_level' | 'filters' | 'created_by_user_id' | 'created_by_api_key_id' | 'created_at'
>;

export class ReportRepository {
  readonly #db: Kysely<Tables>;

  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  async insert(trx: Transaction<any>, report: NewReport, schemaVersion: string): Promise<ReportRow> {
    return (trx as Transaction<Tables>)
      .insertInto('reports')
      .values({
        ...report,
        filters: JSON.stringify(report.filters) as never,
        status: 'PENDING',
        schema_version: schemaVersion,
        error_code: null,
        error_message: null,
        lease_token: null,
        lease_expires_at: null,
        artifact_key: null,
        artifact_content_type: null,
        artifact_size_bytes: null,
        artifact_sha256: null,
        artifact_row_count: null,
        artifact_expires_at: null,
        artifact_deleted_at: null,
        generated_at: null,
        updated_at: report.created_at,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async find(organizationId: string, id: string): Promise<ReportRow | null> {
    const row = await this.#db.selectFrom('reports').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    return row ?? null;
  }

  /** For the generation job and signed download links, which carry no organization. */
  async findById(id: string): Promise<ReportRow | null> {
    return (await this.#db.selectFrom('reports').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
  }

  /**
   * Takes the generation lease of a PENDING report that nobody holds (or whose holder let it
   * lapse). Returns null when the report is finished or another worker holds a live lease.
   */
  async claim(id: string, token: string, leaseSeconds: number): Promise<ReportRow | null> {
    const row = await this.#db
      .updateTable('reports')
      .set({
        lease_token: token,
        lease_expires_at: sql`now() + make_interval(secs => ${leaseSeconds})`,
        attempts: sql`attempts + 1`,
        updated_at: sql`now()`,
      })
      .where('id', '=', id)
      .where('status', 'in', movableTo('PENDING'))
      .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', sql<Date>`now()`)]))
      .returningAll()
      .executeTakeFirst();
    return row ?? null;
  }

  /** Extends a lease; false means it was lost (taken over after lapsing) and the holder must stop. */
  async renew(id: string, token: string, leaseSeconds: number): Promise<boolean> {
    const result = await this.#db
      .updateTable('reports')
      .set({ lease_expires_at: sql`now() + make_interval(secs => ${leaseSeconds})` })
      .where('id', '=', id)
      .where('lease_token', '=', token)
      .where('status', 'in', movableTo('PENDING'))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** Gives the lease back after a transient failure, so the queue's retry can claim at once. */
  async release(id: string, token: string): Promise<void> {
    await this.#db
      .updateTable('reports')
      .set({ lease_token: null, lease_expires_at: null, updated_at: sql`now()` })
      .where('id', '=', id)
      .where('lease_token', '=', token)
      .execute();
  }

  async markReady(id: string, token: string, artifact: ArtifactRecord, generatedAt: Date): Promise<boolean> {
    const result = await this.#db
      .updateTable('reports')
      .set({
        status: 'READY',
        generated_at: generatedAt,
        artifact_key: artifact.key,
        artifact_content_type: artifact.contentType,
        artifact_size_bytes: String(artifact.sizeBytes),
        artifact_sha256: artifact.sha256,
        artifact_row_count: String(artifact.rowCount),
        artifact_expires_at: artifact.expiresAt,
        lease_token: null,
        lease_expires_at: null,
        updated_at: sql`now()`,
      })
      .where('id', '=', id)
      .where('lease_token', '=', token)
      .where('status', 'in', movableTo('READY'))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** Records a failure. With a token, only while that lease is held; without, whenever still PENDING. */
  async markFailed(id: string, token: string | null, code: FailureCode, message: string): Promise<boolean> {
    let query = this.#db
      .updateTable('reports')
      .set({ status: 'FAILED', error_code: code, error_message: message.slice(0, 1000), lease_token: null, lease_expires_at: null, updated_at: sql`now()` })
      .where('id', '=', id)
      .where('status', 'in', movableTo('FAILED'));
    if (token) query = query.where('lease_token', '=', token);
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * PENDING reports whose dispatch was lost: a lease that lapsed (its worker died), or no lease and
   * no activity for a long time (a job that never ran). Marks them redispatched in the same step,
   * which also fences off a worker that comes back from the dead: its lease token is gone.
   */
  async takeStalled(idleSeconds: number, limit = 100): Promise<string[]> {
    const { rows } = await sql<{ id: string }>`
      UPDATE reports SET lease_token = NULL, lease_expires_at = NULL, updated_at = now()
      WHERE id IN (
        SELECT id FROM reports
        WHERE status IN (${sql.join(movableTo('PENDING'))})
          AND ((lease_expires_at IS NOT NULL AND lease_expires_at < now())
               OR (lease_token IS NULL AND updated_at < now() - make_interval(secs => ${idleSeconds})))
        ORDER BY created_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)
      RETURNING id`.execute(this.#db);
    return rows.map((r) => r.id);
  }

  /** When the soonest live lease of a PENDING report lapses, if any. */
  async nextLeaseExpiry(): Promise<Date | null> {
    const row = await this.#db
      .selectFrom('reports')
      .select((eb) => eb.fn.min('lease_expires_at').as('next'))
      .where('status', '=', 'PENDING')
      .where('lease_expires_at', 'is not', null)
      .executeTakeFirst();
    return row?.next ?? null;
  }

  async artifactsToExpire(now: Date, limit: number): Promise<Array<{ id: string; artifact_key: string }>> {
    return (await this.#db
      .selectFrom('reports')
      .select(['id', 'artifact_key'])
      .where('artifact_key', 'is not', null)
      .where('artifact_deleted_at', 'is', null)
      .where('artifact_expires_at', '<=', now)
      .orderBy('artifact_expires_at')
      .limit(limit)
      .execute()) as Array<{ id: string; artifact_key: string }>;
  }

  async markArtifactDeleted(id: string, now: Date): Promise<void> {
    await this.#db.updateTable('reports').set({ artifact_deleted_at: now, updated_at: sql`now()` }).where('id', '=', id).execute();
  }
}
