import { Type } from 'typebox';
import { ListOf, PageQuery, StringEnum, TaggedUnion, Timestamp } from '../platform/http/schemas.ts';
import { AVAILABILITIES, FIAT_METHODS } from './adapter.ts';

export const Availability = StringEnum(AVAILABILITIES, {
  description: 'ACTIVE: taking payments normally. DEGRADED: taking payments, slower or less reliable. DOWN: taking no new payments.',
});

const Fees = Type.Object(
  {
    fixed: Type.String({ description: "Fixed fee per leg, a decimal string in the leg's source asset" }),
    percentBps: Type.Integer({ description: "Basis points of the leg's input amount" }),
    fxSpreadBps: Type.Integer({ description: 'Basis points the rate is widened against the customer on conversions' }),
  },
  { additionalProperties: false },
);

const RailBody = TaggedUnion('type', [
  Type.Object({ type: Type.Literal('FIAT'), country: Type.String(), currency: Type.String(), method: StringEnum(FIAT_METHODS) }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('CRYPTO'), blockchain: Type.String(), asset: Type.String() }, { additionalProperties: false }),
]);

const CapabilityBody = TaggedUnion('kind', [
  Type.Object(
    { kind: StringEnum(['COLLECTION', 'PAYOUT'] as const), rail: RailBody, fees: Fees, etaSeconds: Type.Integer() },
    { additionalProperties: false },
  ),
  Type.Object(
    { kind: Type.Literal('CONVERSION'), from: Type.String(), to: Type.String(), fees: Fees, etaSeconds: Type.Integer() },
    { additionalProperties: false },
  ),
]);

export const OpsProvider = Type.Object(
  {
    id: Type.String({ description: 'Internal provider id from the provider configuration file' }),
    displayName: Type.String({ description: 'Name customers see in the rail directory' }),
    adapter: Type.String({ description: 'Adapter type, e.g. simulator' }),
    integrated: Type.Boolean({ description: 'False when this build has no adapter of that type; such a provider is always DOWN' }),
    simulated: Type.Boolean(),
    configuredStatus: Availability,
    status: Availability,
    overridden: Type.Boolean({ description: 'True when an operator override decides the status' }),
    statusReason: Type.Union([Type.String(), Type.Null()]),
    statusUpdatedAt: Type.Union([Timestamp, Type.Null()]),
    capabilities: Type.Array(CapabilityBody),
  },
  { title: 'OpsProvider', additionalProperties: false },
);

export const OpsProviderList = ListOf(OpsProvider, 'OpsProviderList');
export const OpsProviderListQuery = Type.Object(PageQuery, { additionalProperties: false });

export const ProviderIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const PatchProviderBody = Type.Object(
  {
    status: Type.Union([Availability, Type.Null()], {
      description: 'The availability every process uses from its next refresh; null returns the provider to its configured value',
    }),
    reason: Type.Optional(Type.String({ maxLength: 500, description: 'Why, for the other operators' })),
  },
  { additionalProperties: false },
);
