// One generation attempt of one report: take the lease, check the limits again, stream the
// stored profile's output into the artifact store, and record READY or FAILED.
//
// Failures are of two kinds. A ReportFailure is deterministic (limits, data the profile cannot
// express): the report becomes FAILED with its stable code at once. Anything else is treated as
// transient: the lease is released and the error rethrown, so the queue retries while the report
// stays PENDING; only when the retries are spent does the report become FAILED internal_error.
// A worker that dies holds its lease until it lapses; recovery then dispatches the report again.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../platform/logger.ts';
import { profileByVersion, ReportFailure } from './profiles/index.ts';
import type { GenerationContext } from './profiles/index.ts';
import type { ReportRepository } from './repository.ts';
import type { TransferReporting } from '../transfers/reporting.ts';
import type { ArtifactStore } from './storage.ts';
import type { ReportLimits } from './service.ts';

/** What the queue tells us about the attempt it is running. */
export interface GenerationAttempt {
  /** 0 on the first run of this job, then 1, 2, … on its retries. */
  retryCount: number;
}

/** A report that keeps killing its workers is not dispatched forever. */
const MAX_ATTEMPTS = 10;

class LeaseLost extends Error {}

export interface ReportGeneratorOptions {
  repo: ReportRepository;
  readModel: TransferReporting;
  store: ArtifactStore;
  log: Logger;
  limits: ReportLimits;
  leaseSeconds: number;
  pageSize: number;
  retryLimit: number;
  retentionMs: number;
  now: () => Date;
}

export class ReportGenerator {
  readonly #o: ReportGeneratorOptions;

  constructor(options: ReportGeneratorOptions) {
    this.#o = options;
  }

  async run(reportId: string, attempt: GenerationAttempt): Promise<void> {
    const o = this.#o;
    const token = randomUUID();
    const report = await o.repo.claim(reportId, token, o.leaseSeconds);
    if (!report) {
      // Finished already, or another worker holds a live lease (a duplicate dispatch): nothing to do.
      o.log.debug({ reportId }, 'report generation skipped: not PENDING or leased elsewhere');
      return;
    }
    const log = o.log.child({ reportId, profileVersion: report.profile_version, attempt: report.attempts });
    if (report.attempts > MAX_ATTEMPTS) {
      await o.repo.markFailed(reportId, token, 'internal_error', `Generation did not complete after ${MAX_ATTEMPTS} attempts`);
      log.error('report generation abandoned after too many attempts');
      return;
    }

    // Keep the lease alive while working, also through long queries; stop at once if it was lost.
    let lost = false;
    let renewing = Promise.resolve();
    const renewEveryMs = Math.max(500, (o.leaseSeconds * 1000) / 3);
    const timer = setInterval(() => {
      renewing = o.repo.renew(reportId, token, o.leaseSeconds).then(
        (held) => {
          if (!held) lost = true;
        },
        (err: unknown) => log.warn({ err }, 'could not renew the report generation lease'),
      );
    }, renewEveryMs);
    timer.unref();

    try {
      const profile = profileByVersion(report.profile_version);
      if (!profile) {
        // Created by a newer Corridor (a rolling deploy): this process must not guess the format.
        throw new Error(`This process has no generator for profileVersion ${report.profile_version}`);
      }
      const generatedAt = o.now();
      // The limits again, so skipping the preview, or data that grew since creation, never
      // bypasses them. They are counted while the artifact is written rather than before it: the
      // counts are PostgreSQL's work and the writing is ours, so they overlap instead of taking
      // turns (on a million rows the counts took half a second the generator spent waiting).
      // Nothing is published until both are done, and a failed check stops the writing at its
      // next page; the row limit is also enforced as rows are written.
      let checkFailure: Error | null = null;
      const ctx: GenerationContext = {
        reportId,
        organizationId: report.organization_id,
        filters: report.filters,
        readModel: o.readModel,
        pageSize: o.pageSize,
        generatedAt,
        maxOutputRows: o.limits.maxOutputRows,
        progress: async (rows) => {
          if (lost) throw new LeaseLost();
          if (checkFailure) throw checkFailure;
          log.debug({ rows }, 'report page written');
        },
      };

      const checked = (async () => {
        const counts = await profile.count(ctx);
        if (counts.matchingTransferCount > o.limits.maxMatchingTransfers || counts.outputRowCount > o.limits.maxOutputRows) {
          throw new ReportFailure(
            'report_limit_exceeded',
            `At generation the report covers ${counts.matchingTransferCount} transfers in ${counts.outputRowCount} rows, over the limits ` +
              `(maxMatchingTransfers ${o.limits.maxMatchingTransfers}, maxOutputRows ${o.limits.maxOutputRows})`,
          );
        }
        await profile.check?.(ctx);
      })();
      checked.catch((err: unknown) => {
        checkFailure = err instanceof Error ? err : new Error(String(err));
      });

      // The lease token in the key keeps a zombie worker's output apart from the real artifact.
      const key = `reports/${report.organization_id}/${reportId}/${token}.${profile.extension}`;
      const upload = await o.store.begin(key, profile.contentType);
      let rowCount: number;
      try {
        // A failed check outranks whatever it made the writing stop with.
        rowCount = await profile.write(ctx, upload.stream).catch(async (err: unknown) => {
          await checked;
          throw err;
        });
        await checked;
        if (lost) throw new LeaseLost();
        await upload.commit();
      } catch (err) {
        await upload.abort();
        throw err;
      }
      const digest = upload.digest();
      const done = await o.repo.markReady(
        reportId,
        token,
        { key, contentType: profile.contentType, sizeBytes: digest.sizeBytes, sha256: digest.sha256, rowCount, expiresAt: new Date(generatedAt.getTime() + o.retentionMs) },
        generatedAt,
      );
      if (!done) {
        await o.store.delete(key);
        log.warn('report generation finished after losing its lease; its output was discarded');
        return;
      }
      log.info({ rows: rowCount, sizeBytes: digest.sizeBytes }, 'report generated');
    } catch (err) {
      if (err instanceof ReportFailure) {
        await o.repo.markFailed(reportId, token, err.code, err.message);
        log.info({ code: err.code }, 'report generation failed deterministically');
        return;
      }
      if (err instanceof LeaseLost) {
        log.warn('report generation stopped: its lease lapsed and another worker took over');
        return;
      }
      if (attempt.retryCount >= o.retryLimit) {
        await o.repo.markFailed(reportId, token, 'internal_error', 'Generation kept failing; the error was logged with the report id');
        log.error({ err }, 'report generation failed and its retries are spent');
        return;
      }
      await o.repo.release(reportId, token);
      throw err;
    } finally {
      clearInterval(timer);
      await renewing;
    }
  }
}
