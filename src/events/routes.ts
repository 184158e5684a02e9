import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import { Event, EventList, EventListQuery, EventParams } from './schemas.ts';
import { toEventBody } from './service.ts';
import type { EventService } from './service.ts';

export async function eventRoutes(app: App, deps: { events: EventService }) {
  app.get('/v1/events', {
    config: { auth: 'any', scope: 'webhooks:read' },
    schema: {
      operationId: 'listEvents',
      tags: ['Events'],
      summary: 'Catch up on events',
      description:
        'The events of your organization in stream order, after the event named by after= (or from the oldest). ' +
        'A receiver that was down passes the id of the last event it processed and pages on with meta.nextCursor. ' +
        'Events committed while an older write is still in flight appear once it ends, so a page never skips an event that a later page would show before it. ' +
        'This list is a stream read from a position (after= and cursor= are the same thing), so meta.total counts the events from this page on: ' +
        'what is left to read, this page included. It falls as you page and is 0 when you have caught up.',
      querystring: EventListQuery,
      response: { 200: EventList },
    },
    handler: async (request) => {
      const { after, cursor, limit = 25 } = request.query;
      return deps.events.list(principalOf(request).organizationId, { after: after ?? cursor, afterParameter: after ? 'after' : 'cursor', limit });
    },
  });

  app.get('/v1/events/:id', {
    config: { auth: 'any', scope: 'webhooks:read' },
    schema: {
      operationId: 'getEvent',
      tags: ['Events'],
      summary: 'One event',
      params: EventParams,
      response: { 200: Event, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => toEventBody(await deps.events.get(principalOf(request).organizationId, request.params.id)),
  });
}
