import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import { OpsProvider, OpsProviderList, OpsProviderListQuery, PatchProviderBody, ProviderIdParams } from './schemas.ts';
import type { ProviderRegistry } from './service.ts';

export async function providerRoutes(app: App, deps: { providers: ProviderRegistry; onStatusChange?: () => Promise<void> }) {
  app.get('/v1/ops/providers', {
    config: { auth: 'any', ops: true },
    schema: {
      operationId: 'opsListProviders',
      tags: ['Operations'],
      summary: 'List providers with their configured and current availability',
      description: 'In provider id order.',
      querystring: OpsProviderListQuery,
      response: { 200: OpsProviderList, ...errorResponses({ 400: ['invalid_cursor'] }) },
    },
    handler: async (request) => {
      const { limit = 25, cursor } = request.query;
      return deps.providers.list(limit, cursor);
    },
  });

  app.patch('/v1/ops/providers/:id', {
    config: { auth: 'any', ops: true },
    schema: {
      operationId: 'opsUpdateProvider',
      tags: ['Operations'],
      summary: "Override a provider's availability",
      description: 'Every Corridor process applies the change at its next refresh (CORRIDOR_RAILS_REFRESH_SECONDS); this one at once.',
      params: ProviderIdParams,
      body: PatchProviderBody,
      response: { 200: OpsProvider, ...errorResponses({ 404: ['not_found'], 409: ['provider_not_integrated'] }) },
    },
    handler: async (request) => {
      const view = await deps.providers.setStatus(request.params.id, request.body.status, {
        userId: principalOf(request).userId,
        reason: request.body.reason ?? null,
      });
      await deps.onStatusChange?.();
      return view;
    },
  });
}
