// Reports: the request rules (DECISIONS.md §8, §10), preview, creation with its generation job,
// downloads, and the scheduled recovery and artifact expiry. Generation itself is in
// generation.ts; the output formats are the profiles.
import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { ApiError, notFound, validationError } from '../platform/http/errors.ts';
import type { FieldProblem } from '../platform/http/errors.ts';
import { requestFingerprint } from '../platform/idempotency.ts';
import type { IdempotencyStore, StoredResponse } from '../platform/idempotency.ts';
import type { JobDefinition, JobQueue } from '../platform/queue.ts';
import type { Logger } from '../platform/logger.ts';
import { ceilToMillisecond, iso, isoOrNull } from '../platform/time.ts';
import { TransferReporting } from '../transfers/reporting.ts';
import type { Counts } from '../transfers/reporting.ts';
import { currentProfile } from './profiles/index.ts';
import type { ReportProfile } from './profiles/index.ts';
import { ReportRepository } from './repository.ts';
import type { ReportRow } from './repository.ts';
import { UNMAPPED_STATUSES } from './profiles/pain002.ts';
import { DOWNLOAD_LINK_TTL_MS, DownloadLinkSigner } from './download-links.ts';
import { artifactStoreFor } from './storage.ts';
import type { ArtifactStore, ArtifactStoreSettings } from './storage.ts';
import { runInWorker } from './generation-worker.ts';
import type { WorkerGenerationSettings } from './generation-worker.ts';
import { ReportGenerator } from './generation.ts';
import type { GenerationAttempt } from './generation.ts';
import { SCHEMA_VERSION } from './schemas.ts';
import type { NormalizedFilters, ReportBodyInput, ReportPreviewResource, ReportRequest, ReportResource, TransferStatus } from './schemas.ts';
import { newId } from '../platform/ids.ts';

export const GENERATE_JOB = 'reports.generate';
export const RECOVER_JOB = 'reports.recover';
export const EXPIRE_ARTIFACTS_JOB = 'reports.expire-artifacts';
/** The generation queue's retry policy: a transient failure is retried this many times. */
export const GENERATE_RETRY_LIMIT = 5;

export const ARTIFACT_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** A PENDING report nobody has touched for this long lost its job; it is dispatched again. */
const IDLE_DISPATCH_SECONDS = 30 * 60;

export interface ReportLimits {
  maxMatchingTransfers: number;
  maxOutputRows: number;
}

export interface ReportServiceOptions {
  db: Kysely<any>;
  queue: JobQueue;
  idempotency: IdempotencyStore;
  store: ArtifactStoreSettings;
  log: Logger;
  /**
   * PostgreSQL only: generate in a worker thread that opens its own connections to this database
   * (see generation-worker.ts). Null generates in-process (PGlite).
   */
  worker: { databaseUrl: string; logLevel: string } | null;
  limits: ReportLimits;
  /** How long a generation lease lasts without renewal before another worker may take over. */
  leaseSeconds: number;
  /** Rows read per query while generating. */
  pageSize: number;
  /** Base address download links are built on. */
  publicBaseUrl: () => string;
  now?: () => Date;
}

/** Who is asking: enough of the authenticated principal to record and scope a report. */
export interface ReportCaller {
  organizationId: string;
  userId: string | null;
  apiKeyId: string | null;
}

export interface DownloadableArtifact {
  stream: Readable;
  sizeBytes: number;
  contentType: string;
  fileName: string;
}

const reportNotReady = () => new ApiError(409, 'report_not_ready', 'The report is not READY; poll GET /v1/reports/{reportId} until it is');
const artifactExpired = () => new ApiError(410, 'artifact_expired', 'The artifact of this report was deleted after its seven-day retention; create a new report');

export class ReportService {
  readonly #repo: ReportRepository;
  readonly #db: Kysely<any>;
  readonly #queue: JobQueue;
  readonly #idempotency: IdempotencyStore;
  readonly #store: ArtifactStore;
  readonly #log: Logger;
  readonly #limits: ReportLimits;
  readonly #now: () => Date;
  readonly #publicBaseUrl: () => string;
  readonly #worker: WorkerGenerationSettings | null;
  readonly links: DownloadLinkSigner;
  readonly generator: ReportGenerator;

  constructor(o: ReportServiceOptions) {
    this.#db = o.db;
    this.#repo = new ReportRepository(o.db);
    this.#queue = o.queue;
    this.#idempotency = o.idempotency;
    this.#store = artifactStoreFor(o.store);
    this.#log = o.log;
    this.#limits = o.limits;
    this.#now = o.now ?? (() => new Date());
    this.#publicBaseUrl = o.publicBaseUrl;
    this.links = new DownloadLinkSigner(o.db);
    const tuning = { limits: o.limits, leaseSeconds: o.leaseSeconds, pageSize: o.pageSize, retryLimit: GENERATE_RETRY_LIMIT, retentionMs: ARTIFACT_RETENTION_MS };
    this.generator = new ReportGenerator({ ...tuning, repo: this.#repo, readModel: new TransferReporting(o.db), store: this.#store, log: o.log, now: this.#now });
    const { reportStorage, dataDir, s3Bucket, s3Region, s3Endpoint } = o.store;
    this.#worker = o.worker ? { ...tuning, ...o.worker, store: { reportStorage, dataDir, s3Bucket, s3Region, s3Endpoint } } : null;
  }

  // ---- the request ---------------------------------------------------------------------------

  /** Applies defaults and every cross-field rule; the schema has already checked each field. */
  normalize(body: ReportBodyInput): { request: ReportRequest; profile: ReportProfile } {
    const format = body.format ?? 'CSV';
    const detailLevel = body.detailLevel ?? 'SUMMARY';
    const f = body.filters;
    const problems: FieldProblem[] = [];
    const isIso = format === 'ISO20022_PAIN_002_001_03';

    const from = ceilToMillisecond(f.from).getTime();
    const to = ceilToMillisecond(f.to).getTime();
    if (!(from < to)) problems.push({ path: 'filters.to', message: 'must be after filters.from (the window is half-open: from included, to excluded)' });

    const timestampBasis = f.timestampBasis ?? (body.type === 'TRANSFER_STATUS_HISTORY' ? 'STATUS_EVENT_AT' : 'CREATED_AT');
    if (body.type === 'TRANSFER_STATUS_HISTORY' && timestampBasis !== 'STATUS_EVENT_AT') {
      problems.push({ path: 'filters.timestampBasis', message: 'TRANSFER_STATUS_HISTORY requires STATUS_EVENT_AT' });
    }
    if (body.type === 'TRANSFER_STATUS_HISTORY' && detailLevel === 'EXECUTION_PATH') {
      // Also the ISO profile's answer: it is status history at SUMMARY only.
      problems.push({ path: 'detailLevel', message: 'execution-path detail is not available for TRANSFER_STATUS_HISTORY; use SUMMARY' });
    }

    const assetScope = f.assetScope ?? (isIso ? 'FIAT' : 'ALL');
    if (isIso) {
      if (body.type !== 'TRANSFER_STATUS_HISTORY') problems.push({ path: 'type', message: 'the ISO 20022 pain.002 profile is available only for TRANSFER_STATUS_HISTORY' });
      if (assetScope !== 'FIAT') problems.push({ path: 'filters.assetScope', message: 'the ISO 20022 pain.002 profile covers fiat transfers only: use FIAT' });
      if (f.originalMessageId === undefined) problems.push({ path: 'filters.originalMessageId', message: 'is required for the ISO 20022 pain.002 profile (one document per original message)' });
      if (f.statuses === undefined) problems.push({ path: 'filters.statuses', message: 'is required for the ISO 20022 pain.002 profile: select at least one supported status' });
    }
    if (problems.length) throw validationError(problems);

    if (isIso) {
      const unsupported = (f.statuses ?? []).filter((s) => UNMAPPED_STATUSES.includes(s));
      if (unsupported.length) {
        throw new ApiError(422, 'unsupported_status', `pain.002 has no status for ${unsupported.join(' and ')}; remove ${unsupported.length > 1 ? 'them' : 'it'} from filters.statuses`, {
          details: [{ path: 'filters.statuses', message: `${unsupported.join(', ')} cannot be expressed in pain.002.001.03` }],
        });
      }
    }

    const profile = currentProfile(body.type, format, detailLevel);
    if (!profile) throw validationError([{ path: 'format', message: `no report profile produces ${body.type} ${detailLevel} as ${format}` }]);

    const filters: NormalizedFilters = {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      timestampBasis,
      assetScope,
      includeFees: f.includeFees ?? false,
      originalMessageId: f.originalMessageId ?? null,
      statuses: f.statuses ? ([...f.statuses] as TransferStatus[]) : null,
    };
    return { request: { type: body.type, format, detailLevel, filters }, profile };
  }

  #assess(counts: Counts): ReportPreviewResource {
    const exceeded: Array<'maxMatchingTransfers' | 'maxOutputRows'> = [];
    if (counts.matchingTransferCount > this.#limits.maxMatchingTransfers) exceeded.push('maxMatchingTransfers');
    if (counts.outputRowCount > this.#limits.maxOutputRows) exceeded.push('maxOutputRows');
    return { ...counts, limits: { ...this.#limits }, exceedsLimits: exceeded.length > 0, exceeded };
  }

  // ---- endpoints -----------------------------------------------------------------------------

  async preview(organizationId: string, body: ReportBodyInput): Promise<ReportPreviewResource> {
    const { request, profile } = this.normalize(body);
    const counts = await profile.count({ organizationId, filters: request.filters, readModel: new TransferReporting(this.#db) });
    return this.#assess(counts);
  }

  async create(caller: ReportCaller, idempotencyKey: string, body: ReportBodyInput): Promise<StoredResponse<ReportResource>> {
    const { request, profile } = this.normalize(body);
    return this.#idempotency.run(
      { organizationId: caller.organizationId, operation: 'POST /v1/reports', key: idempotencyKey, requestHash: requestFingerprint(request) },
      async (trx) => {
        const counts = await profile.count({ organizationId: caller.organizationId, filters: request.filters, readModel: new TransferReporting(trx) });
        const verdict = this.#assess(counts);
        if (verdict.exceedsLimits) {
          throw new ApiError(
            422,
            'report_limit_exceeded',
            `This report would cover ${counts.matchingTransferCount} transfers in ${counts.outputRowCount} rows, over the limits ` +
              `(maxMatchingTransfers ${this.#limits.maxMatchingTransfers}, maxOutputRows ${this.#limits.maxOutputRows}); narrow the window or filters`,
          );
        }
        const row = await this.#repo.insert(
          trx,
          {
            id: newId(),
            organization_id: caller.organizationId,
            profile_version: profile.profileVersion,
            type: request.type,
            format: request.format,
            detail_level: request.detailLevel,
            filters: request.filters,
            created_by_user_id: caller.userId,
            created_by_api_key_id: caller.apiKeyId,
            created_at: this.#now(),
          },
          SCHEMA_VERSION,
        );
        // In the same transaction: a report that exists always has its generation job.
        await this.#queue.send(GENERATE_JOB, { reportId: row.id }, { trx });
        return { status: 202, body: toResource(row) };
      },
    );
  }

  async get(organizationId: string, id: string): Promise<ReportResource> {
    const row = await this.#repo.find(organizationId, id);
    if (!row) throw notFound('Report');
    return toResource(row);
  }

  /** A fresh link to the artifact. It never touches the report itself. */
  async requestDownload(organizationId: string, id: string): Promise<{ url: string; expiresAt: string }> {
    const row = await this.#repo.find(organizationId, id);
    if (!row) throw notFound('Report');
    if (row.status !== 'READY') throw reportNotReady();
    const now = this.#now();
    if (!row.artifact_key || row.artifact_deleted_at || !row.artifact_expires_at || row.artifact_expires_at <= now) throw artifactExpired();
    const expiresAtMs = Math.min(now.getTime() + DOWNLOAD_LINK_TTL_MS, row.artifact_expires_at.getTime());
    const presigned = await this.#store.presignedUrl(row.artifact_key, {
      fileName: fileNameOf(row),
      contentType: row.artifact_content_type ?? 'application/octet-stream',
      expiresInSeconds: Math.max(1, Math.floor((expiresAtMs - now.getTime()) / 1000)),
    });
    const url = presigned ?? (await this.signedLink(row.id, expiresAtMs));
    return { url, expiresAt: iso(new Date(expiresAtMs)) };
  }

  /** The service's own signed link (local store). */
  async signedLink(reportId: string, expiresAtMs: number): Promise<string> {
    const signature = await this.links.sign(reportId, expiresAtMs);
    return `${this.#publicBaseUrl()}/v1/report-downloads/${reportId}?expires=${expiresAtMs}&signature=${signature}`;
  }

  /** Resolves a signed link; the link is the only credential. */
  async openDownload(reportId: string, expires: string, signature: string): Promise<DownloadableArtifact> {
    const expiresAtMs = Number(expires);
    const verdict = await this.links.verify(reportId, expiresAtMs, signature, this.#now());
    if (verdict === 'invalid') throw new ApiError(403, 'invalid_download_link', 'This download link is not valid');
    if (verdict === 'expired') throw new ApiError(403, 'download_link_expired', 'This download link has expired; request a new one with POST /v1/reports/{reportId}/download');
    const row = await this.#repo.findById(reportId);
    if (!row || row.status !== 'READY' || !row.artifact_key) throw new ApiError(403, 'invalid_download_link', 'This download link is not valid');
    if (row.artifact_deleted_at || (row.artifact_expires_at && row.artifact_expires_at <= this.#now())) throw artifactExpired();
    const file = await this.#store.open(row.artifact_key);
    if (!file) throw artifactExpired();
    return { stream: file.stream, sizeBytes: file.sizeBytes, contentType: row.artifact_content_type ?? 'application/octet-stream', fileName: fileNameOf(row) };
  }

  // ---- jobs ----------------------------------------------------------------------------------

  /** The jobs reports run on; server.ts defines them on the queue. */
  jobs(): JobDefinition<any>[] {
    return [
      {
        name: GENERATE_JOB,
        handler: (data: { reportId: string }, job) => this.generate(data.reportId, { retryCount: job.retryCount }),
        // Long reports may run a while: the lease, not the queue's expiry, detects a dead worker.
        queue: { retryLimit: GENERATE_RETRY_LIMIT, retryDelay: 5, retryBackoff: true, expireInSeconds: 4 * 3600 },
        concurrency: 2,
        pollingIntervalSeconds: 1,
      },
      { name: RECOVER_JOB, cron: '* * * * *', handler: async () => void (await this.recover()) },
      { name: EXPIRE_ARTIFACTS_JOB, cron: '*/15 * * * *', handler: async () => void (await this.expireArtifacts()) },
    ];
  }

  /** The reports.generate job. */
  generate(reportId: string, attempt: GenerationAttempt): Promise<void> {
    if (this.#worker) return runInWorker(this.#worker, reportId, attempt, this.#log);
    return this.generator.run(reportId, attempt);
  }

  /**
   * The reports.recover job (every minute, and once at start): dispatches again every PENDING
   * report whose worker died (its lease lapsed) or whose job never ran.
   */
  async recover(): Promise<number> {
    const ids = await this.#db.transaction().execute(async (trx) => {
      const stalled = await new ReportRepository(trx).takeStalled(IDLE_DISPATCH_SECONDS);
      for (const reportId of stalled) await this.#queue.send(GENERATE_JOB, { reportId }, { trx });
      return stalled;
    });
    if (ids.length) this.#log.warn({ reports: ids }, 'report generation dispatched again after a lost dispatch');
    return ids.length;
  }

  /**
   * At start: recover what a previous process left behind now, and check again as soon as the
   * soonest lease still held (perhaps by a process that just died) lapses.
   */
  async recoverAtStart(): Promise<void> {
    await this.recover();
    const next = await this.#repo.nextLeaseExpiry();
    if (next) await this.#queue.send(RECOVER_JOB, {}, { startAfter: new Date(next.getTime() + 1000) });
  }

  /** The reports.expire-artifacts job: deletes artifacts past retention; the records stay. */
  async expireArtifacts(): Promise<number> {
    const now = this.#now();
    let deleted = 0;
    for (;;) {
      const batch = await this.#repo.artifactsToExpire(now, 100);
      for (const a of batch) {
        await this.#store.delete(a.artifact_key);
        await this.#repo.markArtifactDeleted(a.id, now);
        deleted++;
      }
      if (batch.length < 100) break;
    }
    const swept = await this.#store.sweepSpool(24 * 3600 * 1000);
    if (deleted || swept) this.#log.info({ deleted, swept }, 'expired report artifacts');
    return deleted;
  }
}

const fileNameOf = (row: ReportRow) => `corridor-report-${row.id}.${row.format === 'CSV' ? 'csv' : 'xml'}`;

export function toResource(row: ReportRow): ReportResource {
  const ready = row.status === 'READY' && row.artifact_key !== null;
  return {
    id: row.id,
    status: row.status,
    schemaVersion: SCHEMA_VERSION,
    profileVersion: row.profile_version,
    type: row.type,
    format: row.format,
    detailLevel: row.detail_level,
    filters: row.filters,
    createdAt: iso(row.created_at),
    generatedAt: isoOrNull(row.generated_at),
    errorCode: row.error_code,
    errorMessage: row.error_message,
    artifact: ready
      ? {
          sizeBytes: Number(row.artifact_size_bytes),
          sha256: row.artifact_sha256!,
          rowCount: Number(row.artifact_row_count),
          expiresAt: iso(row.artifact_expires_at!),
        }
      : null,
  };
}
