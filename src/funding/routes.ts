import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/app.ts';
import { ApiError, validationError } from '../platform/http/errors.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { validatorCompiler } from '../platform/http/validation.ts';
import { principalOf } from '../auth/guard.ts';
import { PROOF_MAX_BYTES } from './proof-files.ts';
import { FundingProof, FundingProofUpload, FundingSession, TransferParams } from './schemas.ts';
import type { FundingService } from './service.ts';

export async function fundingRoutes(app: App, deps: { funding: FundingService }) {
  const { funding } = deps;

  app.post('/v1/transfers/:transferId/funding-session', {
    config: { auth: 'any', scope: 'transfers:write' },
    schema: {
      operationId: 'openFundingSession',
      tags: ['Funding'],
      summary: 'Open (or get) the funding session of a transfer',
      description:
        'Answers 201 with a new session when the transfer is READY_TO_FUND, and moves the transfer to AWAITING_FUNDS in the same step. ' +
        'While a session is open the same request answers 200 with that session, so it is safe to repeat. The instructions belong to this ' +
        'transfer only. When the session expires (CORRIDOR_FUNDING_SESSION_TTL_SECONDS) the transfer returns to READY_TO_FUND and a new ' +
        'request gets new instructions. Other statuses: 409 transfer_not_ready_to_fund (PENDING_SETUP), transfer_in_review, ' +
        'transfer_already_funded, transfer_closed.',
      params: TransferParams,
      response: {
        200: FundingSession,
        201: FundingSession,
        ...errorResponses({ 404: ['not_found'], 409: ['transfer_not_ready_to_fund', 'transfer_in_review', 'transfer_already_funded', 'transfer_closed', 'funding_rail_unsupported'] }),
      },
    },
    handler: async (request, reply) => {
      const p = principalOf(request);
      const { session, created } = await funding.openSession(p.organizationId, request.params.transferId, { userId: p.userId, apiKeyId: p.apiKeyId });
      return reply.code(created ? 201 : 200).send(session);
    },
  });

  // Multipart is parsed only in this scope: every other route keeps answering 415 to it.
  await app.register(async (scope: App) => {
    await scope.register(multipart, {
      throwFileSizeLimit: true,
      limits: { fileSize: PROOF_MAX_BYTES, files: 1, fields: 10, fieldSize: 1024, parts: 12, headerPairs: 100 },
    });

    scope.post('/v1/transfers/:transferId/funding-proof', {
      config: { auth: 'any', scope: 'transfers:write' },
      // The body is a stream read by the handler; only the path is validated up front. The body
      // schema is there for the OpenAPI document.
      validatorCompiler: (route) => (route.httpPart === 'body' ? () => true : validatorCompiler(route)),
      schema: {
        operationId: 'uploadFundingProof',
        tags: ['Funding'],
        summary: 'Upload a proof of payment',
        description:
          'multipart/form-data with the binary in the field `file`: a PDF, JPEG or PNG of up to 10 MB, recognised by its content ' +
          '(not by its name or Content-Type). Over 10 MB: 413 file_too_large (the upload is cut off at the limit). Another type: ' +
          '415 unsupported_file_type. No `file` part: 422 validation_error. The transfer status does not change.',
        consumes: ['multipart/form-data'],
        params: TransferParams,
        body: FundingProofUpload,
        response: {
          200: FundingProof,
          ...errorResponses({ 400: ['invalid_multipart'], 404: ['not_found'], 413: ['file_too_large'], 415: ['unsupported_file_type'] }),
        },
      },
      handler: async (request) => {
        const p = principalOf(request);
        return funding.recordProof({
          organizationId: p.organizationId,
          transferId: request.params.transferId,
          actor: { userId: p.userId, apiKeyId: p.apiKeyId },
          openUpload: () => openFilePart(request),
        });
      },
    });
  });
}

/** The first file part of the upload, which must be the field `file`. */
async function openFilePart(request: FastifyRequest) {
  if (!request.isMultipart()) {
    throw new ApiError(415, 'unsupported_media_type', 'Send the proof as multipart/form-data with the file in the field named file');
  }
  let part;
  try {
    part = await request.file();
  } catch (err) {
    throw multipartError(err);
  }
  if (!part) throw validationError([{ path: 'file', message: 'is required: send the proof as a file part named file' }]);
  if (part.fieldname !== 'file') {
    part.file.resume();
    throw validationError([{ path: 'file', message: `is required: the file was sent in the field "${part.fieldname}"` }]);
  }
  return { fileName: part.filename, file: part.file };
}

function multipartError(err: unknown): unknown {
  const code = (err as { code?: string }).code;
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') {
    return new ApiError(415, 'unsupported_media_type', 'Send the proof as multipart/form-data with the file in the field named file');
  }
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new ApiError(413, 'payload_too_large', 'Send one file, in the field named file, and nothing else of size');
  }
  if (err instanceof Error && !(err instanceof ApiError)) {
    return new ApiError(400, 'invalid_multipart', `The multipart body could not be read: ${err.message}`);
  }
  return err;
}
