import { Type } from 'typebox';
import { ListMeta, StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { EVENT_TYPES } from './service.ts';

export const EventTypeName = StringEnum(EVENT_TYPES, { description: 'transfer.status_changed or transfer.leg_status_changed' });

export const EventData = Type.Object(
  {
    transferId: Type.Optional(Uuid),
    status: Type.Optional(Type.String({ description: 'The transfer status after this change' })),
    previousStatus: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'The status before this change; null for the first one' })),
    blockingParty: Type.Optional(Type.String({ description: 'Who has to act next: CUSTOMER, SERVICE_OPS, PROVIDER or NONE' })),
    version: Type.Optional(Type.Integer({ description: 'The transfer version after this change. Keep the highest you have seen per transfer and drop events with a lower one.' })),
    leg: Type.Optional(
      Type.Object(
        {
          position: Type.Optional(Type.Integer({ description: 'Place of the leg in the execution path, from 1' })),
          kind: Type.Optional(Type.String({ description: 'COLLECTION, CONVERSION or PAYOUT' })),
          provider: Type.Optional(Type.String({ description: 'Name of the provider serving the leg' })),
          providerReference: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: "The provider's customer-safe reference, once the leg was handed to it" })),
          status: Type.Optional(Type.String({ description: 'PENDING, PROCESSING, COMPLETED, FAILED, RETURNED or CANCELED' })),
          progressStage: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Where the leg is within its status (enum per leg kind, see Transfer.legs)' })),
          updatedAt: Type.Optional(Timestamp),
        },
        { description: 'Leg events only: the leg that changed' },
      ),
    ),
  },
  { title: 'EventData', description: 'Never holds provider credentials or raw provider payloads.' },
);

export const Event = Type.Object(
  {
    id: Uuid,
    type: EventTypeName,
    createdAt: Timestamp,
    data: EventData,
  },
  {
    title: 'Event',
    description:
      'The body of every webhook delivery, also readable through GET /v1/events. The id is the webhook-id header of its deliveries and never changes across retries.',
  },
);

export const EventList = Type.Object({ data: Type.Array(Event), meta: ListMeta }, { title: 'EventList' });

export const EventListQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ format: 'uuid', description: 'An event id: answer the events that follow it. Leave out to start at the oldest event.' })),
    cursor: Type.Optional(Type.String({ format: 'uuid', description: 'meta.nextCursor of the previous page (the same as after=)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Page size, 1 to 100' })),
  },
  { additionalProperties: false },
);

export const EventParams = Type.Object({ id: Uuid }, { additionalProperties: false });
