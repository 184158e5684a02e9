// What every report profile provides. A profile is frozen once released: a change to its output
// is a new profileVersion beside it, so reports created earlier are still generated as promised.
import type { Writable } from 'node:stream';
import type { Counts, TransferReporting } from '../../transfers/reporting.ts';
import type { DetailLevel, FailureCode, NormalizedFilters, ReportFormat, ReportType } from '../schemas.ts';

export interface GenerationContext {
  reportId: string;
  organizationId: string;
  filters: NormalizedFilters;
  readModel: TransferReporting;
  /** Rows read from the database per query. */
  pageSize: number;
  generatedAt: Date;
  maxOutputRows: number;
  /** Called after each page is written: aborts a generation that lost its lease or failed its checks. */
  progress(rowsWritten: number): Promise<void>;
}

export interface ReportProfile {
  profileVersion: string;
  type: ReportType;
  format: ReportFormat;
  detailLevel: DetailLevel;
  contentType: string;
  extension: 'csv' | 'xml';
  /** CSV header for these filters (documented per profileVersion in docs/REPORTS.md). */
  columns?(filters: NormalizedFilters): string[];
  count(ctx: Pick<GenerationContext, 'organizationId' | 'filters' | 'readModel'>): Promise<Counts>;
  /** Deterministic data checks, made while the artifact is written: a failure discards it. */
  check?(ctx: GenerationContext): Promise<void>;
  /** Streams the artifact into out (and ends it); returns the number of rows written. */
  write(ctx: GenerationContext, out: Writable): Promise<number>;
}

/** A deterministic failure: the report becomes FAILED with this stable code; retrying cannot help. */
export class ReportFailure extends Error {
  readonly code: FailureCode;
  constructor(code: FailureCode, message: string) {
    super(message);
    this.code = code;
  }
}

export function assertRowLimit(ctx: GenerationContext, rows: number): void {
  if (rows > ctx.maxOutputRows) {
    throw new ReportFailure('report_limit_exceeded', `The report grew past maxOutputRows (${ctx.maxOutputRows}) while it was generated`);
  }
}
