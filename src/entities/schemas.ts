import { Type } from 'typebox';
import type { Static } from 'typebox';
import { ListOf, PageQuery, StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';

export const ENTITY_TYPES = ['INDIVIDUAL', 'BUSINESS'] as const;
export const ENTITY_STATUSES = ['PENDING', 'ACTIVE', 'REJECTED'] as const;

/** Sandbox magic values: the surname or legal name that chooses the onboarding outcome. */
export const SANDBOX_MAGIC_NAMES = { Pending: 'PENDING', Rejected: 'REJECTED' } as const;

const ONBOARDING_NOTE =
  'Onboarding: in production a new entity is PENDING until the service operator approves (ACTIVE) or rejects (REJECTED) it. ' +
  'The sandbox approves at once (ACTIVE) unless a magic value asks otherwise: an INDIVIDUAL whose lastName, or a BUSINESS ' +
  'whose legalName, is exactly "Pending" (any letter case) stays PENDING; "Rejected" is REJECTED at once. ' +
  'Quotes and transfers need an ACTIVE entity (422 entity_not_onboarded otherwise).';

export const CountryCode = Type.String({ minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2 country code, e.g. DE' });

export const PostalAddress = Type.Object(
  {
    line1: Type.String({ minLength: 1, maxLength: 200 }),
    line2: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    city: Type.String({ minLength: 1, maxLength: 100 }),
    region: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'State, province or county' })),
    postalCode: Type.Optional(Type.String({ minLength: 1, maxLength: 20 })),
    country: CountryCode,
  },
  { additionalProperties: false, title: 'PostalAddress' },
);

const Name = (description?: string) => Type.String({ minLength: 1, maxLength: 140, ...(description ? { description } : {}) });
const Email = Type.String({ format: 'email', maxLength: 254 });

const IndividualInput = Type.Object(
  {
    type: Type.Literal('INDIVIDUAL'),
    firstName: Name(),
    lastName: Name('Sandbox: "Pending" keeps the entity PENDING, "Rejected" makes it REJECTED.'),
    email: Type.Optional(Email),
    dateOfBirth: Type.Optional(Type.String({ format: 'date', description: 'YYYY-MM-DD, in the past' })),
    country: CountryCode,
    address: Type.Optional(PostalAddress),
  },
  { additionalProperties: false, title: 'IndividualEntityInput' },
);

const BusinessInput = Type.Object(
  {
    type: Type.Literal('BUSINESS'),
    legalName: Name('Sandbox: "Pending" keeps the entity PENDING, "Rejected" makes it REJECTED.'),
    tradingName: Type.Optional(Name()),
    registrationNumber: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Company registration number in its country' })),
    email: Type.Optional(Email),
    country: CountryCode,
    address: Type.Optional(PostalAddress),
  },
  { additionalProperties: false, title: 'BusinessEntityInput' },
);

export type CreateEntityInput = Static<typeof IndividualInput> | Static<typeof BusinessInput>;

// The branch is chosen by `type` with if/then rather than oneOf, so a validation failure names the
// fields of the chosen kind only instead of every branch's complaints.
export const CreateEntityBody = Type.Unsafe<CreateEntityInput>({
  type: 'object',
  title: 'CreateEntity',
  description: `An INDIVIDUAL or a BUSINESS, chosen by type. ${ONBOARDING_NOTE}`,
  required: ['type'],
  properties: { type: { type: 'string', enum: [...ENTITY_TYPES] } },
  allOf: [
    { if: { properties: { type: { const: 'INDIVIDUAL' } }, required: ['type'] }, then: IndividualInput },
    { if: { properties: { type: { const: 'BUSINESS' } }, required: ['type'] }, then: BusinessInput },
  ],
});

export const Entity = Type.Object(
  {
    id: Uuid,
    type: StringEnum(ENTITY_TYPES),
    status: StringEnum(ENTITY_STATUSES, { description: ONBOARDING_NOTE }),
    statusReason: Type.Union([Type.String(), Type.Null()], { description: 'Why the entity is REJECTED, when known' }),
    firstName: Type.Optional(Type.String()),
    lastName: Type.Optional(Type.String()),
    dateOfBirth: Type.Optional(Type.String({ format: 'date' })),
    legalName: Type.Optional(Type.String()),
    tradingName: Type.Optional(Type.String()),
    registrationNumber: Type.Optional(Type.String()),
    email: Type.Optional(Type.String()),
    country: Type.String(),
    address: Type.Optional(PostalAddress),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Entity', description: 'A person or business the organization moves money for or to.' },
);

export const EntityList = ListOf(Entity, 'EntityList');

export const EntityListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(StringEnum(ENTITY_STATUSES)),
    type: Type.Optional(StringEnum(ENTITY_TYPES)),
  },
  { additionalProperties: false },
);

export const OpsEntityListQuery = Type.Object(
  { ...PageQuery, status: Type.Optional(StringEnum(ENTITY_STATUSES, { description: 'Default PENDING: the review queue' })) },
  { additionalProperties: false },
);

// The body is optional: a rejection without a reason is allowed.
export const RejectEntityBody = Type.Union([
  Type.Object({ reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Shown to the customer as statusReason' })) }, { additionalProperties: false }),
  Type.Null(),
]);

export const EntityIdParams = Type.Object({ id: Uuid });

/** What the operator sees: the entity and the organization it belongs to. */
export const OpsEntity = Type.Object({ ...Entity.properties, organizationId: Uuid }, { title: 'OpsEntity' });
export const OpsEntityList = ListOf(OpsEntity, 'OpsEntityList');
