// Transfer routes: creation, reads and cancel for customers; fund and advance for sandbox tests
// (not mounted in production, so they answer 404 there); approve and reject for operations staff.
import { Type } from 'typebox';
import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { requireIdempotencyKey } from '../platform/idempotency.ts';
import { principalOf } from '../auth/guard.ts';
import type { Environment } from '../platform/config.ts';
import { CreateTransferBody, FundBody, OpsTransferList, OpsTransferListQuery, ReviewBody, Transfer, TransferList, TransferListQuery, TransferParams } from './schemas.ts';
import type { TransferBody, TransferService } from './service.ts';
import type { FastifyReply } from 'fastify';
import type { TransferEngine } from './execution.ts';

// Required: the preValidation hook answers 400 idempotency_key_required (or invalid_idempotency_key)
// before the schema is checked, so a missing key is never a 422.
const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.String({ description: 'One key per logical transfer (1 to 255 printable ASCII characters); a retry with the same key and body returns the same transfer' }),
});

/** The stored view is already the JSON the schema describes: it is sent as is, not re-serialized. */
const send = (reply: FastifyReply, body: TransferBody) => (typeof body === 'string' ? reply.type('application/json; charset=utf-8').send(body) : reply.send(body));

const actorOf = (p: { userId: string | null; apiKeyId: string | null }) => ({ userId: p.userId, apiKeyId: p.apiKeyId });

export async function transferRoutes(app: App, deps: { transfers: TransferService; engine: TransferEngine; env: Environment }) {
  const { transfers, engine } = deps;

  app.post('/v1/transfers', {
    config: { auth: 'any', scope: 'transfers:write' },
    schema: {
      operationId: 'createTransfer',
      tags: ['Transfers'],
      summary: 'Create a transfer from a quote option and a saved destination',
      description:
        'Binds one unexpired quote option to the saved destination it was quoted for (an option quoted without a destination takes any saved ' +
        "destination of the entity on the option's `to` rail, at its current version). Answers 201 with the transfer; a replay with the same " +
        'Idempotency-Key and body answers the same status and body with `Idempotent-Replayed: true`. Refusals: 400 idempotency_key_required, ' +
        '409 idempotency_key_reused, 409 idempotency_request_in_progress, 422 quote_expired, 409 quote_option_used, ' +
        '409 quote_destination_changed, 422 entity_not_onboarded, 422 destination_mismatch, 422 quote_entity_mismatch; ' +
        'an entity, quote option or destination your organization does not have is 404 not_found. ' +
        'Sandbox: the fraction of the quote request amount picks an outcome: .91 payout fails (FAILED), .92 payout returned (RETURNED), ' +
        '.93 review after funding (IN_REVIEW), .94 conversion fails, or the payout on a path without one (REFUNDED); anything else completes.',
      headers: IdempotencyHeaders,
      body: CreateTransferBody,
      response: {
        201: Transfer,
        ...errorResponses({
          400: ['idempotency_key_required', 'invalid_idempotency_key'],
          404: ['not_found'],
          409: ['idempotency_key_reused', 'idempotency_request_in_progress', 'quote_option_used', 'quote_destination_changed'],
          422: ['quote_expired', 'entity_not_onboarded', 'destination_mismatch', 'quote_entity_mismatch'],
        }),
      },
    },
    preValidation: async (request) => {
      requireIdempotencyKey(request.headers['idempotency-key']);
    },
    handler: async (request, reply) => {
      const key = requireIdempotencyKey(request.headers['idempotency-key']);
      const result = await transfers.create(principalOf(request).organizationId, key, request.body);
      if (result.replayed) reply.header('Idempotent-Replayed', 'true');
      return send(reply.code(result.status as 201), result.body);
    },
  });

  app.get('/v1/transfers', {
    config: { auth: 'any', scope: 'transfers:read' },
    schema: {
      operationId: 'listTransfers',
      tags: ['Transfers'],
      summary: 'List transfers',
      description: 'Oldest first, paged with a cursor; filters: status, entityId, createdFrom (included), createdTo (excluded).',
      querystring: TransferListQuery,
      response: { 200: TransferList, ...errorResponses({ 400: ['invalid_cursor'], 404: ['not_found'] }) },
    },
    handler: async (request) => transfers.list(principalOf(request).organizationId, request.query),
  });

  app.get('/v1/transfers/:transferId', {
    config: { auth: 'any', scope: 'transfers:read' },
    schema: {
      operationId: 'getTransfer',
      tags: ['Transfers'],
      summary: 'The transfer with its latest state, legs, timeline and funding instructions',
      params: TransferParams,
      response: { 200: Transfer, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request, reply) => send(reply, await transfers.body(principalOf(request).organizationId, request.params.transferId)),
  });

  app.post('/v1/transfers/:transferId/cancel', {
    config: { auth: 'any', scope: 'transfers:write' },
    schema: {
      operationId: 'cancelTransfer',
      tags: ['Transfers'],
      summary: 'Cancel a transfer before its funds are received',
      description: 'Allowed in PENDING_SETUP, READY_TO_FUND, AWAITING_FUNDS (and IN_REVIEW before funds). Afterwards: 409 transfer_not_cancelable.',
      params: TransferParams,
      response: { 200: Transfer, ...errorResponses({ 404: ['not_found'], 409: ['transfer_not_cancelable'] }) },
    },
    handler: async (request, reply) => {
      const p = principalOf(request);
      return send(reply, await transfers.cancel(p.organizationId, request.params.transferId, actorOf(p)));
    },
  });

  if (deps.env === 'sandbox') {
    app.post('/v1/sandbox/transfers/:transferId/fund', {
      config: { auth: 'any', scope: 'transfers:write' },
      schema: {
        operationId: 'sandboxFundTransfer',
        tags: ['Sandbox'],
        summary: 'Simulate the customer\'s funds arriving',
        description:
          'Sandbox only (404 in production). READY_TO_FUND or AWAITING_FUNDS → IN_PROGRESS: the collection leg completes and the funds are posted. ' +
          'The amount, when sent, must be the exact amount to fund (422 funding_amount_mismatch otherwise). ' +
          'A PENDING_SETUP transfer is prepared first; if a provider it needs is DOWN, 503 provider_unavailable and nothing changes.',
        params: TransferParams,
        body: Type.Optional(FundBody),
        response: { 200: Transfer, ...errorResponses({ 404: ['not_found'], 409: ['invalid_transition'], 422: ['funding_amount_mismatch'], 503: ['provider_unavailable'] }) },
      },
      handler: async (request, reply) => send(reply, await engine.fund(principalOf(request).organizationId, request.params.transferId, request.body?.amount)),
    });

    app.post('/v1/sandbox/transfers/:transferId/advance', {
      config: { auth: 'any', scope: 'transfers:write' },
      schema: {
        operationId: 'sandboxAdvanceTransfer',
        tags: ['Sandbox'],
        summary: 'Move the transfer\'s next leg one step now',
        description:
          'Sandbox only (404 in production). Works in PENDING_SETUP (prepares the path) and IN_PROGRESS; 409 invalid_transition otherwise. ' +
          'When the provider of the next leg is DOWN: 503 provider_unavailable and nothing changes; the transfer waits (blockingParty PROVIDER) and moves on once the provider is back.',
        params: TransferParams,
        response: { 200: Transfer, ...errorResponses({ 404: ['not_found'], 409: ['invalid_transition'], 503: ['provider_unavailable'] }) },
      },
      handler: async (request, reply) => send(reply, await engine.advance(principalOf(request).organizationId, request.params.transferId)),
    });
  }

  app.get('/v1/ops/transfers', {
    config: { auth: 'bearer', ops: true },
    schema: {
      operationId: 'opsListTransfers',
      tags: ['Operations'],
      summary: 'The review queue: transfers in one status across organizations',
      description:
        'IN_REVIEW unless `status` says otherwise, oldest first (the longest waiting on top), paged with a cursor; ' +
        '`organizationId` narrows it to one organization. Each item is the transfer as GET /v1/transfers lists it, with its organizationId.',
      querystring: OpsTransferListQuery,
      response: { 200: OpsTransferList, ...errorResponses({ 400: ['invalid_cursor'] }) },
    },
    handler: async (request) => transfers.listForReview(request.query),
  });

  for (const decision of ['approve', 'reject'] as const) {
    app.post(`/v1/ops/transfers/:transferId/${decision}`, {
      config: { auth: 'bearer', ops: true },
      schema: {
        operationId: decision === 'approve' ? 'opsApproveTransfer' : 'opsRejectTransfer',
        tags: ['Operations'],
        summary: decision === 'approve' ? 'Approve a transfer in review' : 'Reject a transfer in review',
        description:
          decision === 'approve'
            ? 'IN_REVIEW → IN_PROGRESS once funded (execution resumes), or READY_TO_FUND before funds. Any organization\'s transfer.'
            : 'IN_REVIEW → REFUNDED once funded (the funds go back), or FAILED before funds. Any organization\'s transfer.',
        params: TransferParams,
        body: Type.Optional(ReviewBody),
        response: { 200: Transfer, ...errorResponses({ 404: ['not_found'], 409: ['invalid_transition'] }) },
      },
      handler: async (request) => {
        const p = principalOf(request);
        const { organizationId: _org, ...transfer } = await engine[decision](request.params.transferId, actorOf(p), request.body?.reason);
        return transfer;
      },
    });
  }
}
