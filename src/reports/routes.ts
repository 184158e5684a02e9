import { Type } from 'typebox';
import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { requireIdempotencyKey } from '../platform/idempotency.ts';
import { principalOf } from '../auth/guard.ts';
import { DownloadQuery, Report, ReportBody, ReportDownload, ReportParams, ReportPreview } from './schemas.ts';
import type { ReportService } from './service.ts';
import { describeProfiles } from './profiles/index.ts';

const BODY_NOTES =
  'Windows are half-open (from included, to excluded) and UTC. Limits (maxMatchingTransfers, maxOutputRows) are enforced at preview, creation and generation. ' +
  'Profiles and their columns: docs/REPORTS.md.';

export async function reportRoutes(app: App, deps: { reports: ReportService }) {
  app.post('/v1/reports/preview', {
    config: { auth: 'any', scope: 'reports:read', feature: 'reports' },
    schema: {
      operationId: 'previewReport',
      tags: ['Reports'],
      summary: 'Count what a report would contain, without creating it',
      description: `Answers the counts and the active limits. Stores and queues nothing; counts can change before generation. ${BODY_NOTES}`,
      body: ReportBody,
      response: { 200: ReportPreview, ...errorResponses({ 422: ['unsupported_status'] }) },
    },
    handler: async (request) => deps.reports.preview(principalOf(request).organizationId, request.body),
  });

  app.post('/v1/reports', {
    config: { auth: 'any', scope: 'reports:write', feature: 'reports' },
    schema: {
      operationId: 'createReport',
      tags: ['Reports'],
      summary: 'Create a report (generated asynchronously)',
      description:
        'Answers 202 with the PENDING report; poll GET /v1/reports/{reportId} until READY or FAILED. Idempotency-Key is required: a replay of the same request ' +
        'answers the original report (with Idempotent-Replayed: true); the same key with a different request is 409 idempotency_key_reused. ' +
        'Over a limit: 422 report_limit_exceeded. ISO requests: 422 validation_error without filters.originalMessageId or filters.statuses, ' +
        `422 unsupported_status when filters.statuses holds RETURNED or REFUNDED. ${BODY_NOTES} ` +
        `CSV is RFC 4180 (UTF-8, CRLF, header row); a cell starting with =, +, -, @, tab or CR gets a leading single quote. ${describeProfiles()}`,
      // Required: the preValidation hook answers 400 idempotency_key_required (or invalid_idempotency_key)
      // before the schema is checked, so a missing key is never a 422.
      headers: Type.Object({
        'idempotency-key': Type.String({ description: 'One key per logical export (1 to 255 printable ASCII characters)' }),
      }),
      body: ReportBody,
      response: {
        202: Report,
        ...errorResponses({
          400: ['idempotency_key_required', 'invalid_idempotency_key'],
          409: ['idempotency_key_reused', 'idempotency_request_in_progress'],
          422: ['unsupported_status', 'report_limit_exceeded'],
        }),
      },
    },
    preValidation: async (request) => {
      requireIdempotencyKey(request.headers['idempotency-key']);
    },
    handler: async (request, reply) => {
      const key = requireIdempotencyKey(request.headers['idempotency-key']);
      const p = principalOf(request);
      const result = await deps.reports.create({ organizationId: p.organizationId, userId: p.userId, apiKeyId: p.apiKeyId }, key, request.body);
      if (result.replayed) reply.header('Idempotent-Replayed', 'true');
      return reply.code(202).send(result.body);
    },
  });

  app.get('/v1/reports/:reportId', {
    config: { auth: 'any', scope: 'reports:read', feature: 'reports' },
    schema: {
      operationId: 'getReport',
      tags: ['Reports'],
      summary: 'A report and its status',
      params: ReportParams,
      response: { 200: Report, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => deps.reports.get(principalOf(request).organizationId, request.params.reportId),
  });

  app.post('/v1/reports/:reportId/download', {
    config: { auth: 'any', scope: 'reports:read', feature: 'reports' },
    schema: {
      operationId: 'createReportDownloadLink',
      tags: ['Reports'],
      summary: 'A download link for a READY report, valid for 15 minutes',
      description:
        'Each call signs a new link; the report is never regenerated. 409 report_not_ready unless READY; 410 artifact_expired once the artifact ' +
        'was deleted (seven days after generation).',
      params: ReportParams,
      response: { 200: ReportDownload, ...errorResponses({ 404: ['not_found'], 409: ['report_not_ready'], 410: ['artifact_expired'] }) },
    },
    handler: async (request) => deps.reports.requestDownload(principalOf(request).organizationId, request.params.reportId),
  });

  app.get('/v1/report-downloads/:reportId', {
    config: { auth: 'none' },
    schema: {
      operationId: 'downloadReportArtifact',
      tags: ['Reports'],
      summary: 'Fetch an artifact through a signed download link',
      description:
        'The link from POST /v1/reports/{reportId}/download; it needs no other credential. An expired link answers 403 download_link_expired, ' +
        'a tampered one 403 invalid_download_link, and a deleted artifact 410 artifact_expired.',
      params: ReportParams,
      querystring: DownloadQuery,
      response: {
        200: {
          description: 'The artifact, as an attachment: text/csv (RFC 4180) for CSV reports, application/xml (pain.002.001.03) for ISO reports',
          content: { 'text/csv': { schema: { type: 'string' } }, 'application/xml': { schema: { type: 'string' } } },
        },
        ...errorResponses({ 403: ['invalid_download_link', 'download_link_expired'], 410: ['artifact_expired'] }),
      },
    },
    handler: async (request, reply) => {
      const artifact = await deps.reports.openDownload(request.params.reportId, request.query.expires, request.query.signature);
      return reply
        .header('Content-Type', artifact.contentType)
        .header('Content-Length', String(artifact.sizeBytes))
        .header('Content-Disposition', `attachment; filename="${artifact.fileName}"`)
        .header('Cache-Control', 'private, no-store')
        .header('X-Content-Type-Options', 'nosniff')
        // A stream is sent as is; the response schema only documents the content types.
        .send(artifact.stream as never);
    },
  });
}
