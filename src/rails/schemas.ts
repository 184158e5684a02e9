import { Type } from 'typebox';
import { StringEnum } from '../platform/http/schemas.ts';
import { FIAT_METHODS } from '../providers/adapter.ts';
import { Availability } from '../providers/schemas.ts';

const RailProvider = Type.Object(
  {
    name: Type.String({ description: 'Customer-visible provider name' }),
    status: Availability,
  },
  { additionalProperties: false },
);

const ActiveProviderCount = Type.Integer({
  minimum: 0,
  description: 'Providers on this route that are not DOWN (ACTIVE or DEGRADED). activeOnly=true leaves out routes where it is 0.',
});

const Providers = Type.Array(RailProvider, { description: 'Every provider serving the route (collection or payout), with its availability' });

export const FiatRailEntry = Type.Object(
  {
    country: Type.String({ description: 'ISO 3166-1 alpha-2 country code' }),
    currency: Type.String({ description: 'ISO 4217 currency code' }),
    method: StringEnum(FIAT_METHODS, { description: 'The payment method exactly as the providers run it; never a generic label' }),
    activeProviderCount: ActiveProviderCount,
    providers: Providers,
  },
  { title: 'FiatRail', additionalProperties: false },
);

export const CryptoRailEntry = Type.Object(
  {
    blockchain: Type.String({ description: 'e.g. ETHEREUM, POLYGON, BITCOIN, STELLAR' }),
    asset: Type.String({ description: 'e.g. USDC, ETH, BTC' }),
    activeProviderCount: ActiveProviderCount,
    providers: Providers,
  },
  { title: 'CryptoRail', additionalProperties: false },
);

export const RailDirectory = Type.Object(
  {
    fiat: Type.Array(FiatRailEntry),
    crypto: Type.Array(CryptoRailEntry),
  },
  {
    title: 'RailDirectory',
    additionalProperties: false,
    description: 'Rails on which some provider of this environment can collect or pay out. Refreshed periodically (CORRIDOR_RAILS_REFRESH_SECONDS).',
  },
);

export const RailsQuery = Type.Object(
  {
    activeOnly: Type.Optional(Type.Boolean({ default: false, description: 'true leaves out routes whose activeProviderCount is 0' })),
  },
  { additionalProperties: false },
);
