// The report body, the report resource, the preview and the download answer (SPEC.md "Report",
// DECISIONS.md §8). The same schemas validate requests and generate the OpenAPI document.
import { Type } from 'typebox';
import type { Static } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';

export const REPORT_TYPES = ['TRANSFER_ACTIVITY', 'TRANSFER_STATUS_HISTORY'] as const;
export type ReportType = (typeof REPORT_TYPES)[number];
export const REPORT_FORMATS = ['CSV', 'ISO20022_PAIN_002_001_03'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];
export const DETAIL_LEVELS = ['SUMMARY', 'EXECUTION_PATH'] as const;
export type DetailLevel = (typeof DETAIL_LEVELS)[number];
export const TIMESTAMP_BASES = ['CREATED_AT', 'STATUS_EVENT_AT'] as const;
export type TimestampBasis = (typeof TIMESTAMP_BASES)[number];
export const ASSET_SCOPES = ['ALL', 'FIAT', 'CRYPTO'] as const;
export type AssetScope = (typeof ASSET_SCOPES)[number];
export const REPORT_STATUSES = ['PENDING', 'READY', 'FAILED'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

/** SPEC.md's transfer statuses: the values a report can select on. */
export const TRANSFER_STATUSES = [
  'PENDING_SETUP', 'READY_TO_FUND', 'AWAITING_FUNDS', 'IN_PROGRESS', 'IN_REVIEW',
  'COMPLETED', 'FAILED', 'RETURNED', 'REFUNDED', 'CANCELED',
] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export const SCHEMA_VERSION = 'service.report.v1';

/** Stable codes a FAILED report carries (DECISIONS.md §8). */
export const FAILURE_CODES = ['report_limit_exceeded', 'missing_payment_references', 'unsupported_status_in_window', 'internal_error'] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];

const Max35 = (description: string) => Type.String({ minLength: 1, maxLength: 35, description });

export const ReportFilters = Type.Object(
  {
    from: Type.String({ format: 'date-time', description: 'Start of the window (ISO 8601 UTC), included' }),
    to: Type.String({ format: 'date-time', description: 'End of the window (ISO 8601 UTC), excluded. Must be after from.' }),
    timestampBasis: Type.Optional(
      StringEnum(TIMESTAMP_BASES, {
        description:
          'Which timestamp the window applies to. CREATED_AT: transfers created in the window. STATUS_EVENT_AT: transfers with at least one status event in the window; ' +
          "summary status, reason, blocking party and update time then come from the transfer's latest status event inside the window. " +
          'Default: CREATED_AT for TRANSFER_ACTIVITY, STATUS_EVENT_AT for TRANSFER_STATUS_HISTORY (which accepts nothing else).',
      }),
    ),
    assetScope: Type.Optional(
      StringEnum(ASSET_SCOPES, {
        description: "ALL (default), FIAT (transfers whose destination rail is fiat) or CRYPTO (destination rail is a blockchain). The ISO profile requires FIAT.",
      }),
    ),
    includeFees: Type.Optional(Type.Boolean({ description: 'Add the fee columns to CSV activity profiles (default false). No effect on status history or pain.002.' })),
    originalMessageId: Type.Optional(
      Max35('Only transfers whose paymentReferences.originalMessageId is this value. Required for the ISO profile: one pain.002 document answers one original message.'),
    ),
    statuses: Type.Optional(
      Type.Array(StringEnum(TRANSFER_STATUSES), {
        minItems: 1,
        uniqueItems: true,
        description:
          'Transfer statuses to include. Activity: the current status (CREATED_AT) or the status of the latest event in the window (STATUS_EVENT_AT). ' +
          'Status history: the status each event moved to. Required for the ISO profile, where RETURNED and REFUNDED are refused (422 unsupported_status).',
      }),
    ),
  },
  { additionalProperties: false, title: 'ReportFilters' },
);
export type ReportFiltersInput = Static<typeof ReportFilters>;

export const ReportBody = Type.Object(
  {
    type: StringEnum(REPORT_TYPES, { description: 'TRANSFER_ACTIVITY or TRANSFER_STATUS_HISTORY' }),
    format: Type.Optional(StringEnum(REPORT_FORMATS, { description: 'CSV (default) or ISO20022_PAIN_002_001_03 (fiat summary status history only)' })),
    detailLevel: Type.Optional(StringEnum(DETAIL_LEVELS, { description: 'SUMMARY (default) or EXECUTION_PATH (one row per provider leg; TRANSFER_ACTIVITY CSV only)' })),
    filters: ReportFilters,
  },
  { additionalProperties: false, title: 'ReportRequest' },
);
export type ReportBodyInput = Static<typeof ReportBody>;

/** Filters as stored and echoed: every default filled in, timestamps normalized. */
export interface NormalizedFilters {
  from: string;
  to: string;
  timestampBasis: TimestampBasis;
  assetScope: AssetScope;
  includeFees: boolean;
  originalMessageId: string | null;
  statuses: TransferStatus[] | null;
}

export interface ReportRequest {
  type: ReportType;
  format: ReportFormat;
  detailLevel: DetailLevel;
  filters: NormalizedFilters;
}

const ReportFiltersOut = Type.Object(
  {
    from: Timestamp,
    to: Timestamp,
    timestampBasis: StringEnum(TIMESTAMP_BASES),
    assetScope: StringEnum(ASSET_SCOPES),
    includeFees: Type.Boolean(),
    originalMessageId: Type.Union([Type.String(), Type.Null()]),
    statuses: Type.Union([Type.Array(StringEnum(TRANSFER_STATUSES)), Type.Null()]),
  },
  { title: 'ReportFiltersApplied', description: 'The filters as applied, with defaults filled in' },
);

const Artifact = Type.Object(
  {
    sizeBytes: Type.Integer(),
    sha256: Type.String({ description: 'Hex SHA-256 of the artifact bytes' }),
    rowCount: Type.Integer({ description: 'CSV: data rows (the header is not counted). pain.002: TxInfAndSts entries.' }),
    expiresAt: Timestamp,
  },
  { title: 'ReportArtifact', description: 'Present once the report is READY. The artifact is deleted at expiresAt (seven days after generation); the record stays.' },
);

export const Report = Type.Object(
  {
    id: Uuid,
    status: StringEnum(REPORT_STATUSES, { description: 'PENDING, then READY or FAILED' }),
    schemaVersion: Type.Literal(SCHEMA_VERSION),
    profileVersion: Type.String({
      description:
        'Fixed at creation; generation always uses it. One of csv.transfer_activity.summary.v1, csv.transfer_activity.execution_path.v1, ' +
        'csv.transfer_status_history.summary.v1, pain.002.001.03.v1 (columns in docs/REPORTS.md).',
    }),
    type: StringEnum(REPORT_TYPES),
    format: StringEnum(REPORT_FORMATS),
    detailLevel: StringEnum(DETAIL_LEVELS),
    filters: ReportFiltersOut,
    createdAt: Timestamp,
    generatedAt: Type.Union([Timestamp, Type.Null()]),
    errorCode: Type.Union([StringEnum(FAILURE_CODES), Type.Null()], {
      description: 'Set when FAILED: report_limit_exceeded, missing_payment_references, unsupported_status_in_window, or internal_error (after retries ran out)',
    }),
    errorMessage: Type.Union([Type.String(), Type.Null()]),
    artifact: Type.Union([Artifact, Type.Null()]),
  },
  { title: 'Report' },
);
export type ReportResource = Static<typeof Report>;

export const ReportPreview = Type.Object(
  {
    matchingTransferCount: Type.Integer({ description: 'Transfers the report would cover' }),
    outputRowCount: Type.Integer({ description: 'CSV data rows, or pain.002 TxInfAndSts entries' }),
    limits: Type.Object({ maxMatchingTransfers: Type.Integer(), maxOutputRows: Type.Integer() }),
    exceedsLimits: Type.Boolean(),
    exceeded: Type.Array(StringEnum(['maxMatchingTransfers', 'maxOutputRows'] as const), { description: 'Which limits the request exceeds' }),
  },
  { title: 'ReportPreview', description: 'Counts at preview time; data can change before generation. Nothing is stored or queued.' },
);
export type ReportPreviewResource = Static<typeof ReportPreview>;

export const ReportDownload = Type.Object(
  {
    url: Type.String({ description: 'Signed link to the artifact; needs no other credential' }),
    expiresAt: Timestamp,
  },
  { title: 'ReportDownload', description: 'A link valid for 15 minutes. When it lapses, ask for a new one; the report is not recreated.' },
);

export const ReportParams = Type.Object({ reportId: Uuid }, { additionalProperties: false });

export const DownloadQuery = Type.Object(
  {
    expires: Type.String({ pattern: '^\\d{1,15}$', description: 'Expiry of the link, in milliseconds since the epoch' }),
    signature: Type.String({ pattern: '^[A-Za-z0-9_-]{1,100}$', description: 'HMAC of the report id and expiry' }),
  },
  { additionalProperties: false },
);
