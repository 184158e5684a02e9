import { Type } from 'typebox';
import { ListOf, PageQuery, StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { EventTypeName } from '../events/schemas.ts';

const EndpointStatus = StringEnum(['ENABLED', 'DISABLED'] as const, { description: 'ENABLED, or DISABLED: nothing is sent to it' });

const endpointFields = {
  id: Uuid,
  url: Type.String({ description: 'Where deliveries are POSTed' }),
  description: Type.Union([Type.String(), Type.Null()]),
  eventTypes: Type.Array(EventTypeName, { description: 'The event types delivered to this endpoint' }),
  status: EndpointStatus,
  disabledReason: Type.Union([Type.String(), Type.Null()], {
    description:
      'Why the endpoint is disabled: disabled_by_user, endpoint_gone (it answered 410) or too_many_failures (CORRIDOR_WEBHOOK_MAX_CONSECUTIVE_FAILURES attempts in a row failed); null while enabled',
  }),
  disabledAt: Type.Union([Timestamp, Type.Null()]),
  previousSecretExpiresAt: Type.Union([Timestamp, Type.Null()], {
    description: 'After a rotation: until when the replaced secret still signs deliveries (as a second signature); null otherwise',
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

export const WebhookEndpoint = Type.Object(endpointFields, { title: 'WebhookEndpoint' });

export const WebhookEndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    secret: Type.String({ description: 'The signing secret (whsec_ + base64). Shown only in this response: store it now.' }),
  },
  { title: 'WebhookEndpointWithSecret' },
);

export const WebhookEndpointList = ListOf(WebhookEndpoint, 'WebhookEndpointList');

const EventTypes = Type.Array(EventTypeName, { minItems: 1, uniqueItems: true, description: 'Event types to deliver; subscribing to both is advised' });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'An https URL (production also refuses loopback, private, link-local and metadata addresses)' });
const Description = Type.String({ maxLength: 500 });

export const CreateWebhookEndpoint = Type.Object(
  {
    url: Url,
    eventTypes: EventTypes,
    description: Type.Optional(Description),
  },
  { additionalProperties: false, title: 'CreateWebhookEndpoint' },
);

export const UpdateWebhookEndpoint = Type.Object(
  {
    url: Type.Optional(Url),
    eventTypes: Type.Optional(EventTypes),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    status: Type.Optional(StringEnum(['ENABLED', 'DISABLED'] as const, { description: 'DISABLED stops deliveries; ENABLED resumes them and clears the failure count' })),
  },
  { additionalProperties: false, minProperties: 1, title: 'UpdateWebhookEndpoint' },
);

export const DeliveryAttempt = Type.Object(
  {
    attemptNumber: Type.Integer({ description: '1 for the first attempt of the delivery' }),
    trigger: StringEnum(['AUTOMATIC', 'MANUAL'] as const, { description: 'MANUAL for a replay asked for through the API' }),
    succeeded: Type.Boolean({ description: 'The endpoint answered 2xx' }),
    statusCode: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status answered; null when no answer came (timeout, refused connection, refused address)' }),
    latencyMs: Type.Integer({ description: 'Milliseconds from sending to the answer (status and up to 1 KB of body)' }),
    responseBody: Type.Union([Type.String(), Type.Null()], { description: 'The first 1 KB of what the endpoint answered' }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why the attempt failed; null on success' }),
    startedAt: Timestamp,
    finishedAt: Timestamp,
  },
  { title: 'WebhookDeliveryAttempt' },
);

export const WebhookDelivery = Type.Object(
  {
    id: Uuid,
    endpointId: Uuid,
    eventId: Type.String({ format: 'uuid', description: 'The event delivered; also the webhook-id header of every attempt' }),
    eventType: EventTypeName,
    status: StringEnum(['PENDING', 'SUCCEEDED', 'FAILED'] as const, { description: 'PENDING while attempts remain, SUCCEEDED after a 2xx, FAILED once retries ran out or the endpoint was disabled' }),
    attemptCount: Type.Integer(),
    nextAttemptAt: Type.Union([Timestamp, Type.Null()], { description: 'When the next automatic attempt is due; null when none is' }),
    lastAttemptAt: Type.Union([Timestamp, Type.Null()]),
    failureReason: Type.Union([Type.String(), Type.Null()], { description: 'retries_exhausted or endpoint_disabled once FAILED' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    attempts: Type.Array(DeliveryAttempt, { description: 'Every attempt, oldest first' }),
  },
  { title: 'WebhookDelivery' },
);

export const WebhookDeliveryList = ListOf(WebhookDelivery, 'WebhookDeliveryList');

export const EndpointParams = Type.Object({ id: Uuid }, { additionalProperties: false });
export const DeliveryParams = Type.Object({ id: Uuid, deliveryId: Uuid }, { additionalProperties: false });
export const ListQuery = Type.Object(PageQuery, { additionalProperties: false });
