import { Type } from 'typebox';
import type { Static } from 'typebox';
import { StringEnum, TaggedUnion, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { FIAT_METHODS } from '../providers/adapter.ts';

const ROUNDING_NOTE =
  'Arithmetic is exact, in minor units of each currency or asset (ISO 4217 digits; USDC 6, BTC 8, ETH 18). ' +
  "Each leg's fee is fixed + percentBps of the leg's input, in the leg's input asset, rounded UP to that asset's precision. " +
  "A conversion applies the provider's rate (mid × (1 − fxSpreadBps/10,000)) to the leg's input after its fee and rounds the result DOWN, " +
  'so the beneficiary never receives more than the arithmetic allows. With fixedSide TO the legs are solved backwards from the exact ' +
  'requested toAmount: each conversion asks for the smallest input that delivers its required output (rounded UP), and each fee for the ' +
  'smallest input that leaves the required amount after the fee.';

export const FiatRoute = Type.Object(
  {
    type: Type.Literal('FIAT'),
    country: Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2 country code' }),
    currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 currency code' }),
    method: StringEnum(FIAT_METHODS, { description: 'Payment method exactly as GET /v1/rails lists it' }),
  },
  { additionalProperties: false, title: 'FiatRoute' },
);

export const CryptoRoute = Type.Object(
  {
    type: Type.Literal('CRYPTO'),
    blockchain: Type.String({ pattern: '^[A-Z][A-Z0-9_]{1,31}$', description: 'e.g. ETHEREUM, POLYGON, BITCOIN, STELLAR' }),
    asset: Type.String({ pattern: '^[A-Z0-9]{2,10}$', description: 'e.g. USDC, ETH, BTC' }),
  },
  { additionalProperties: false, title: 'CryptoRoute' },
);

export const Route = TaggedUnion('type', [FiatRoute, CryptoRoute], {
  description: 'A rail from the rail directory (GET /v1/rails): FIAT {country, currency, method} or CRYPTO {blockchain, asset}.',
});

const PositiveDecimal = Type.String({
  pattern: '^\\d{1,20}(\\.\\d{1,18})?$',
  description:
    "Decimal amount, greater than zero, with no more fraction digits than the fixed side's asset has (USD 2, JPY 0, USDC 6, BTC 8, ETH 18); " +
    'more is 422 validation_error at `amount`. In the sandbox its fraction picks the outcome of a transfer made from the quote (.91 FAILED, ' +
    '.92 RETURNED, .93 IN_REVIEW, .94 REFUNDED).',
});

export const QuoteRequest = Type.Object(
  {
    entityId: Uuid,
    from: Route,
    to: Route,
    amount: PositiveDecimal,
    fixedSide: Type.Optional(
      StringEnum(['FROM', 'TO'] as const, {
        description: 'Which side `amount` fixes. FROM (the default when absent): the customer sends exactly `amount`. TO: the beneficiary receives exactly `amount`.',
      }),
    ),
    destinationFiatAccountId: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'For a transfer-ready quote to a fiat account: the account must belong to the entity and sit on the `to` rail (422 destination_mismatch otherwise). ' +
          "The options are bound to the account's current version; if it is edited before the transfer, the transfer answers 409 quote_destination_changed.",
      }),
    ),
    destinationCryptoWalletId: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'The crypto counterpart of destinationFiatAccountId: a saved wallet of the entity on the `to` blockchain and asset. At most one of the two may be given.',
      }),
    ),
    activeOnly: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          'Restricts to routes with active providers, like GET /v1/rails?activeOnly=true. Quotes never route through a DOWN provider whatever this says, ' +
          'so true and false give the same options; a route with no provider that is not DOWN gives no option and a no_active_provider advisory, never an error.',
      }),
    ),
  },
  { additionalProperties: false, title: 'QuoteRequest' },
);
export type QuoteRequest = Static<typeof QuoteRequest>;

const Money = (description: string) => Type.String({ description: `${description} Decimal string at the asset's precision.` });

export const Fee = Type.Object(
  {
    type: StringEnum(['COLLECTION_FEE', 'CONVERSION_FEE', 'PAYOUT_FEE'] as const, { description: 'Which kind of leg charges it' }),
    amount: Money("Fixed + percentBps of the leg's input, rounded UP."),
    currency: Type.String({ description: "The leg's input asset" }),
    legPosition: Type.Integer({ minimum: 1, description: 'The leg that charges it' }),
  },
  { additionalProperties: false, title: 'QuoteFee' },
);

export const QuoteLeg = Type.Object(
  {
    position: Type.Integer({ minimum: 1 }),
    kind: StringEnum(['COLLECTION', 'CONVERSION', 'PAYOUT'] as const, {
      description: 'COLLECTION takes the customer funds on the `from` rail, CONVERSION changes asset, PAYOUT delivers on the `to` rail',
    }),
    provider: Type.String({ description: 'Customer-visible provider name' }),
    fromAsset: Type.String({ description: 'Asset entering the leg' }),
    toAsset: Type.String({ description: 'Asset leaving the leg' }),
  },
  { additionalProperties: false, title: 'QuoteLeg' },
);

export const Advisory = Type.Object(
  {
    code: Type.String({
      description:
        'provider_degraded: an option uses a DEGRADED provider (it may be slower). no_active_provider: every provider for part of the route is DOWN, so no option uses it. ' +
        'no_provider: no provider collects or pays out on the rail. no_conversion_path: no conversion (direct or bridged through one intermediate asset) joins the two assets. ' +
        'amount_below_fees: a path was left out because its fees take the whole amount.',
    }),
    severity: StringEnum(['INFO', 'WARNING'] as const),
    message: Type.String(),
  },
  { additionalProperties: false, title: 'QuoteAdvisory' },
);
export type Advisory = Static<typeof Advisory>;

export const QuoteOption = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'Pass as quoteOptionId to POST /v1/transfers' }),
    status: StringEnum(['OPEN', 'USED', 'EXPIRED'] as const, { description: 'OPEN until a transfer uses it (USED) or expiresAt passes (EXPIRED)' }),
    fromAsset: Type.String({ description: 'Asset the customer sends (the `from` rail currency or asset)' }),
    toAsset: Type.String({ description: 'Asset the beneficiary receives' }),
    fromAmount: Money('What the customer sends, fees included. Equals `amount` when fixedSide is FROM.'),
    toAmount: Money('What the beneficiary receives. Equals `amount` when fixedSide is TO.'),
    rate: Type.String({ description: 'toAmount ÷ fromAmount, all fees and spreads included; exact, or cut DOWN to 12 significant digits when it does not terminate.' }),
    fees: Type.Array(Fee, { description: 'Every fee, one per leg that charges one, each in its leg input asset. FX spreads are inside the rate, not listed here.' }),
    totalFee: Money('The sum of `fees`, each converted back to fromAsset at the mid rate and rounded UP.'),
    feeCurrency: Type.String({ description: 'Currency of totalFee: always fromAsset' }),
    eta: Type.Object(
      {
        seconds: Type.Integer({ minimum: 0, description: 'Sum of the legs’ expected durations' }),
        estimatedArrivalAt: Timestamp,
      },
      { additionalProperties: false },
    ),
    expiresAt: Timestamp,
    legs: Type.Array(QuoteLeg, { description: 'The execution path, ordered by position' }),
  },
  { additionalProperties: false, title: 'QuoteOption', description: ROUNDING_NOTE },
);

export const Quote = Type.Object(
  {
    id: Uuid,
    entityId: Uuid,
    from: Route,
    to: Route,
    amount: Type.String({ description: 'The requested amount, at the fixed side asset precision' }),
    fixedSide: StringEnum(['FROM', 'TO'] as const),
    activeOnly: Type.Boolean(),
    destination: Type.Union(
      [
        Type.Object(
          {
            type: StringEnum(['FIAT_ACCOUNT', 'CRYPTO_WALLET'] as const),
            id: Uuid,
            version: Type.Integer({ minimum: 1, description: 'The destination version the options are bound to' }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'The saved destination the options are bound to, or null' },
    ),
    options: Type.Array(QuoteOption, {
      description:
        'Ranked cheapest-delivered first: with fixedSide FROM the largest toAmount first, with TO the smallest fromAmount first; a shorter ETA, then fewer legs, breaks ties. At most 5. ' +
        'Empty when no path has an available provider (see advisories).',
    }),
    advisories: Type.Array(Advisory),
    createdAt: Timestamp,
  },
  { additionalProperties: false, title: 'Quote' },
);

export const QuoteIdParams = Type.Object({ id: Uuid }, { additionalProperties: false });
