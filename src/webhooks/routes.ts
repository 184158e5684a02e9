import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import {
  CreateWebhookEndpoint,
  DeliveryParams,
  EndpointParams,
  ListQuery,
  UpdateWebhookEndpoint,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from './schemas.ts';
import type { WebhookService } from './service.ts';

/** How deliveries work, in the OpenAPI document next to the endpoint that registers them. */
export const DELIVERY_CONTRACT = [
  'Each delivery is an HTTPS POST following Standard Webhooks (https://www.standardwebhooks.com). The body is the event, ' +
    '`{id, type, createdAt, data}`, and three headers sign it: `webhook-id` (the event id, the same on every retry and replay), ' +
    '`webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` ' +
    'keyed with the secret; during a rotation overlap two space-separated signatures, one per secret). Verify with any Standard ' +
    'Webhooks library, e.g. `new Webhook(secret).verify(rawBody, headers)` from the `standardwebhooks` npm package.',
  'Delivery is at least once. Any 2xx answer within the timeout (CORRIDOR_WEBHOOK_TIMEOUT_MS, default 10 s) is success; redirects are not ' +
    'followed and count as failures. Failures are retried with exponential backoff and jitter: about 5 s, 20 s, 80 s, 5 min, 21 min, 85 min, ' +
    '6 h, then every 12 h, 14 attempts over about 3.3 days; a Retry-After header (seconds or HTTP date) pushes the next attempt later, up to 12 h, except that the first retry ' +
    'always comes within 10 s. ' +
    'A 410 answer disables the endpoint at once, and so do CORRIDOR_WEBHOOK_MAX_CONSECUTIVE_FAILURES failed attempts in a row.',
  'Duplicates and ordering: the same event can arrive more than once and events can arrive out of order. Deduplicate by `webhook-id`, and ' +
    'keep per transfer the highest `data.version` you have applied: drop an event whose version is lower. Fetch the transfer before any ' +
    'irreversible side effect. After downtime, catch up with GET /v1/events?after=<last event id you processed>.',
].join('\n\n');

export async function webhookRoutes(app: App, deps: { webhooks: WebhookService }) {
  const { webhooks } = deps;

  app.post('/v1/webhook-endpoints', {
    config: { auth: 'any', scope: 'webhooks:write' },
    schema: {
      operationId: 'createWebhookEndpoint',
      tags: ['Webhooks'],
      summary: 'Register a webhook endpoint',
      description: `Answers the endpoint with its signing secret, which is never shown again.\n\n${DELIVERY_CONTRACT}`,
      body: CreateWebhookEndpoint,
      response: { 201: WebhookEndpointWithSecret, ...errorResponses({ 422: ['unsafe_webhook_url'] }) },
    },
    handler: async (request, reply) => {
      const created = await webhooks.createEndpoint(principalOf(request).organizationId, request.body);
      return reply.code(201).send(created);
    },
  });

  app.get('/v1/webhook-endpoints', {
    config: { auth: 'any', scope: 'webhooks:read' },
    schema: {
      operationId: 'listWebhookEndpoints',
      tags: ['Webhooks'],
      summary: 'List webhook endpoints (without secrets)',
      querystring: ListQuery,
      response: { 200: WebhookEndpointList, ...errorResponses({ 400: ['invalid_cursor'] }) },
    },
    handler: async (request) => {
      const { limit = 25, cursor } = request.query;
      return webhooks.listEndpoints(principalOf(request).organizationId, limit, cursor);
    },
  });

  app.get('/v1/webhook-endpoints/:id', {
    config: { auth: 'any', scope: 'webhooks:read' },
    schema: {
      operationId: 'getWebhookEndpoint',
      tags: ['Webhooks'],
      summary: 'One webhook endpoint (without its secret)',
      params: EndpointParams,
      response: { 200: WebhookEndpoint, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => webhooks.getEndpoint(principalOf(request).organizationId, request.params.id),
  });

  app.patch('/v1/webhook-endpoints/:id', {
    config: { auth: 'any', scope: 'webhooks:write' },
    schema: {
      operationId: 'updateWebhookEndpoint',
      tags: ['Webhooks'],
      summary: 'Change a webhook endpoint: url, eventTypes, description, or status to disable or enable it',
      params: EndpointParams,
      body: UpdateWebhookEndpoint,
      response: { 200: WebhookEndpoint, ...errorResponses({ 404: ['not_found'], 422: ['unsafe_webhook_url'] }) },
    },
    handler: async (request) => webhooks.updateEndpoint(principalOf(request).organizationId, request.params.id, request.body),
  });

  app.delete('/v1/webhook-endpoints/:id', {
    config: { auth: 'any', scope: 'webhooks:write' },
    schema: {
      operationId: 'deleteWebhookEndpoint',
      tags: ['Webhooks'],
      summary: 'Delete a webhook endpoint and its delivery history; nothing more is sent to it',
      params: EndpointParams,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request, reply) => {
      await webhooks.deleteEndpoint(principalOf(request).organizationId, request.params.id);
      return reply.code(204).send(null);
    },
  });

  app.post('/v1/webhook-endpoints/:id/rotate-secret', {
    config: { auth: 'any', scope: 'webhooks:write' },
    schema: {
      operationId: 'rotateWebhookEndpointSecret',
      tags: ['Webhooks'],
      summary: 'Issue a new signing secret',
      description:
        'Answers the new secret, shown only here. For CORRIDOR_WEBHOOK_SECRET_OVERLAP_SECONDS (default 24 h) every delivery carries two ' +
        'signatures, one with the new secret and one with the replaced one, so a receiver can deploy the new secret without missing a delivery. ' +
        'Every attempt is signed when it is sent: retries of deliveries that were in flight at the rotation carry both signatures during the overlap ' +
        'and only the new one afterwards. Rotating again during the overlap retires the oldest secret at once (only the two newest sign).',
      params: EndpointParams,
      response: { 200: WebhookEndpointWithSecret, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => webhooks.rotateSecret(principalOf(request).organizationId, request.params.id),
  });

  app.get('/v1/webhook-endpoints/:id/deliveries', {
    config: { auth: 'any', scope: 'webhooks:read' },
    schema: {
      operationId: 'listWebhookDeliveries',
      tags: ['Webhooks'],
      summary: 'Deliveries to this endpoint, newest first, each with every attempt',
      params: EndpointParams,
      querystring: ListQuery,
      response: { 200: WebhookDeliveryList, ...errorResponses({ 400: ['invalid_cursor'], 404: ['not_found'] }) },
    },
    handler: async (request) => {
      const { limit = 25, cursor } = request.query;
      return webhooks.listDeliveries(principalOf(request).organizationId, request.params.id, limit, cursor);
    },
  });

  app.post('/v1/webhook-endpoints/:id/deliveries/:deliveryId/replay', {
    config: { auth: 'any', scope: 'webhooks:write' },
    schema: {
      operationId: 'replayWebhookDelivery',
      tags: ['Webhooks'],
      summary: 'Send a delivery again now',
      description:
        'Queues one more attempt of the delivery, with the same event and the same webhook-id; it shows in the delivery as a MANUAL attempt. ' +
        'A replay that succeeds marks a FAILED delivery SUCCEEDED. A disabled endpoint answers 409 webhook_endpoint_disabled.',
      params: DeliveryParams,
      response: { 202: WebhookDelivery, ...errorResponses({ 404: ['not_found'], 409: ['webhook_endpoint_disabled'] }) },
    },
    handler: async (request, reply) => {
      const { id, deliveryId } = request.params;
      return reply.code(202).send(await webhooks.replay(principalOf(request).organizationId, id, deliveryId));
    },
  });
}
