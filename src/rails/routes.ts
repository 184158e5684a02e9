import type { App } from '../platform/http/app.ts';
import { RailDirectory, RailsQuery } from './schemas.ts';
import type { RailService } from './service.ts';

export async function railRoutes(app: App, deps: { rails: RailService }) {
  app.get('/v1/rails', {
    config: { auth: 'any' },
    schema: {
      operationId: 'listRails',
      tags: ['Rails'],
      summary: 'The fiat and crypto rails of this environment, with provider availability',
      description:
        'Consult it before presenting routes or building a quote request. The answer is cached and refreshed every CORRIDOR_RAILS_REFRESH_SECONDS (30 by default), so an availability change shows up within that interval.',
      querystring: RailsQuery,
      response: { 200: RailDirectory },
    },
    handler: async (request) => deps.rails.directory({ activeOnly: request.query.activeOnly === true }),
  });
}
