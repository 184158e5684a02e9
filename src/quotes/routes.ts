import type { App } from '../platform/http/app.ts';
import { ApiError } from '../platform/http/errors.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import { Quote, QuoteIdParams, QuoteRequest } from './schemas.ts';
import type { QuoteService } from './service.ts';

export async function quoteRoutes(app: App, deps: { quotes: QuoteService }) {
  app.post('/v1/quotes', {
    config: { auth: 'any', scope: 'quotes:write' },
    schema: {
      operationId: 'createQuote',
      tags: ['Quotes'],
      summary: 'Quote the ways to move an amount from one rail to another',
      description:
        'Searches the provider network for execution paths (collection on `from`, zero to two conversions, payout on `to`) and answers up to five ' +
        'options ranked cheapest-delivered first, each valid until its expiresAt (CORRIDOR_QUOTE_TTL_SECONDS, default 300). A rail the directory ' +
        'does not have is 422 unsupported_route; a route whose providers are all DOWN gives no option and a no_active_provider advisory. ' +
        'The entity must be ACTIVE (422 entity_not_onboarded). See docs/QUOTES.md for the arithmetic.',
      body: QuoteRequest,
      response: { 201: Quote, ...errorResponses({ 404: ['not_found'], 422: ['unsupported_route', 'entity_not_onboarded', 'destination_mismatch'] }) },
    },
    handler: async (request, reply) => {
      const quote = await deps.quotes.create(principalOf(request).organizationId, request.body);
      return reply.code(201).send(quote);
    },
  });

  app.get('/v1/quotes/:id', {
    config: { auth: 'any' },
    schema: {
      operationId: 'getQuote',
      tags: ['Quotes'],
      summary: 'A stored quote with the current status of its options',
      description: 'Requires scope `quotes:write` or `transfers:read`.',
      params: QuoteIdParams,
      response: { 200: Quote, ...errorResponses({ 403: ['insufficient_permissions'], 404: ['not_found'] }) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      if (!principal.scopes.has('quotes:write') && !principal.scopes.has('transfers:read')) {
        throw new ApiError(403, 'insufficient_permissions', 'This request needs the quotes:write or transfers:read permission');
      }
      return deps.quotes.get(principal.organizationId, request.params.id);
    },
  });
}
