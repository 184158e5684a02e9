// Request and response schemas of transfers. The same schemas validate requests and generate the
// OpenAPI document, so the leg and stage enums documented there are the ones the engine uses.
import { Type } from 'typebox';
import type { Static } from 'typebox';
import { ListOf, PageQuery, StringEnum, TaggedUnion, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { PROGRESS_STAGES, RETURNED_STAGE } from '../providers/adapter.ts';
import { ALL_PROGRESS_STAGES, BLOCKING_PARTIES, LEG_KINDS, LEG_STATUSES, TRANSFER_STATUSES } from './state-machine.ts';

const Money = (description: string) => Type.String({ pattern: '^\\d+(\\.\\d+)?$', description: `${description} (decimal string at the asset's precision)` });
const NullableMoney = (description: string) => Type.Union([Money(description), Type.Null()], { description: `${description}; null until known` });

/** pain.002 Max35Text: every original reference is 1 to 35 characters. */
const Max35Text = (description: string) => Type.String({ minLength: 1, maxLength: 35, description: `${description} (pain.002 Max35Text: 1 to 35 characters)` });

export const PaymentReferences = Type.Object(
  {
    sourceSystem: Max35Text('System that issued the original payment instruction'),
    originalMessageId: Max35Text('MsgId of the original pain.001 message'),
    originalMessageNameId: Max35Text('Message name of the original message, e.g. pain.001.001.03'),
    originalPaymentInformationId: Max35Text('PmtInfId of the original payment information block'),
    originalInstructionId: Max35Text('InstrId of the original instruction'),
    originalEndToEndId: Max35Text('EndToEndId of the original instruction'),
  },
  {
    additionalProperties: false,
    title: 'PaymentReferences',
    description: 'References of the original payment instruction (treasury or ERP import). All six are required when the object is sent; ISO 20022 reports need them.',
  },
);

export const DestinationRef = TaggedUnion(
  'type',
  [
    Type.Object({ type: Type.Literal('FIAT_ACCOUNT'), fiatAccountId: Uuid }, { additionalProperties: false }),
    Type.Object({ type: Type.Literal('CRYPTO_WALLET'), cryptoWalletId: Uuid }, { additionalProperties: false }),
  ],
  { description: 'The saved destination to pay: {type: FIAT_ACCOUNT, fiatAccountId} or {type: CRYPTO_WALLET, cryptoWalletId}. It must be the one the option was quoted for.' },
);

export const CreateTransferBody = Type.Object(
  {
    quoteOptionId: Type.String({ format: 'uuid', description: 'id of an unexpired, unused quote option' }),
    destination: DestinationRef,
    entityId: Type.String({ format: 'uuid', description: 'The onboarded (ACTIVE) entity the transfer is made for; the one the quote was made for' }),
    clientReference: Type.Optional(Type.String({ minLength: 1, maxLength: 140, description: 'Your own reference; it does not replace the Idempotency-Key' })),
    paymentReferences: Type.Optional(PaymentReferences),
  },
  { additionalProperties: false, title: 'CreateTransferRequest' },
);
export type CreateTransferBody = Static<typeof CreateTransferBody>;

const RailSchema = TaggedUnion(
  'type',
  [
    Type.Object({ type: Type.Literal('FIAT'), country: Type.String(), currency: Type.String(), method: Type.String() }),
    Type.Object({ type: Type.Literal('CRYPTO'), blockchain: Type.String(), asset: Type.String() }),
  ],
  { title: 'Rail' },
);

const stageDoc = Object.entries(PROGRESS_STAGES)
  .map(([kind, stages]) => `${kind}: ${stages.join(' → ')}`)
  .join('; ');

export const Leg = Type.Object(
  {
    position: Type.Integer({ minimum: 1, description: 'Order of execution, from 1' }),
    kind: StringEnum(LEG_KINDS, { description: 'COLLECTION takes the customer\'s funds in, CONVERSION exchanges one asset for another, PAYOUT delivers to the destination' }),
    provider: Type.String({ description: 'Customer-visible name of the provider carrying the leg' }),
    providerReference: Type.Union([Type.String(), Type.Null()], { description: 'The provider\'s customer-safe reference, once the leg was handed to it' }),
    status: StringEnum(LEG_STATUSES, {
      description: 'PENDING (not started), PROCESSING, COMPLETED, FAILED, RETURNED (a payout the beneficiary\'s bank sent back), CANCELED (never run because the transfer ended first)',
    }),
    progressStage: StringEnum(ALL_PROGRESS_STAGES as [string, ...string[]], {
      description: `Granular progress, per kind, in order (the last is reached on COMPLETED): ${stageDoc}. A returned payout shows ${RETURNED_STAGE}. FAILED and CANCELED legs keep the stage they had reached.`,
    }),
    fromAsset: Type.String(),
    toAsset: Type.String(),
    quotedAmountIn: Money('Amount entering the leg as quoted, in fromAsset'),
    quotedAmountOut: Money('Amount leaving the leg as quoted, in toAsset'),
    actualAmountIn: NullableMoney('Amount actually handed to the provider, in fromAsset'),
    actualAmountOut: NullableMoney('Amount the provider actually delivered, in toAsset'),
    statusReason: Type.Union([Type.String(), Type.Null()], { description: 'Why the leg FAILED or was RETURNED' }),
    updatedAt: Timestamp,
  },
  { title: 'TransferLeg', additionalProperties: false },
);

export const TimelineItem = Type.Object(
  {
    type: StringEnum(['STATUS', 'LEG'] as const, { description: 'STATUS: the transfer changed status; LEG: a leg changed status or stage' }),
    status: StringEnum(TRANSFER_STATUSES, { description: 'Transfer status after the change' }),
    previousStatus: Type.Union([StringEnum(TRANSFER_STATUSES), Type.Null()], { description: 'Transfer status before the change; null on the creation item' }),
    blockingParty: StringEnum(BLOCKING_PARTIES),
    reason: Type.Union([Type.String(), Type.Null()]),
    leg: Type.Union([Type.Object({ position: Type.Integer(), status: StringEnum(LEG_STATUSES) }), Type.Null()], { description: 'The leg that changed (LEG items)' }),
    progressStage: Type.Union([StringEnum(ALL_PROGRESS_STAGES as [string, ...string[]]), Type.Null()], {
      description: 'The stage at this point in history: the changed leg\'s stage on LEG items, the stage of the leg then under way on STATUS items',
    }),
    version: Type.Integer({ description: 'The transfer version this change produced' }),
    occurredAt: Timestamp,
  },
  { title: 'TransferTimelineItem', additionalProperties: false },
);

const Amounts = {
  quoted: Type.Object(
    {
      sourceAmount: Money('What the customer pays, in sourceAsset'),
      destinationAmount: Money('What the destination receives, in destinationAsset'),
      feeTotal: Money('Total fee, in feeCurrency'),
      feeCurrency: Type.String(),
      rate: Type.String({ description: 'Overall rate: destinationAsset per sourceAsset' }),
    },
    { additionalProperties: false, description: 'Amounts locked by the quote option' },
  ),
  actual: Type.Object(
    {
      sourceAmount: NullableMoney('Funds received'),
      destinationAmount: NullableMoney('Amount delivered to the destination'),
      feeTotal: NullableMoney('Fees kept (zero when the transfer did not deliver and money went back)'),
    },
    { additionalProperties: false, description: 'Amounts as they happened' },
  ),
};

export const Transfer = Type.Object(
  {
    id: Uuid,
    status: StringEnum(TRANSFER_STATUSES, {
      description:
        'PENDING_SETUP → READY_TO_FUND → AWAITING_FUNDS → IN_PROGRESS → COMPLETED; IN_REVIEW can interrupt funding or execution; FAILED, RETURNED, REFUNDED and CANCELED are terminal too',
    }),
    blockingParty: StringEnum(BLOCKING_PARTIES, { description: 'Who holds the next action: CUSTOMER (funding), SERVICE_OPS (review), PROVIDER (setup, execution), NONE (terminal)' }),
    statusReason: Type.Union([Type.String(), Type.Null()]),
    version: Type.Integer({ description: 'Rises with every change; drop any data with a lower version than you hold' }),
    entityId: Uuid,
    quoteId: Uuid,
    quoteOptionId: Uuid,
    clientReference: Type.Union([Type.String(), Type.Null()]),
    paymentReferences: Type.Union([PaymentReferences, Type.Null()]),
    from: RailSchema,
    to: RailSchema,
    sourceAsset: Type.String(),
    destinationAsset: Type.String(),
    quoted: Amounts.quoted,
    actual: Amounts.actual,
    destination: Type.Object(
      {
        type: StringEnum(['FIAT_ACCOUNT', 'CRYPTO_WALLET'] as const),
        id: Uuid,
        version: Type.Integer({ description: 'The destination version confirmed at creation' }),
        relationship: StringEnum(['SELF', 'THIRD_PARTY'] as const),
        snapshot: Type.Record(Type.String(), Type.Unknown(), { description: 'The confirmed version\'s rail and instructions, exactly as they were at creation' }),
      },
      { additionalProperties: false },
    ),
    legs: Type.Array(Leg, { description: 'Ordered by position. The transfer has no top-level progressStage: read status and blockingParty for the overall state.' }),
    timeline: Type.Array(TimelineItem, { description: 'Every status and leg change, oldest first' }),
    awaitingFundsInstructions: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'The active funding session\'s instructions, present while the transfer is AWAITING_FUNDS' })),
    fundsReceivedAt: Type.Union([Timestamp, Type.Null()]),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Transfer', additionalProperties: false },
);
export type Transfer = Static<typeof Transfer>;

export const TransferSummary = Type.Object(
  Object.fromEntries(Object.entries(Transfer.properties).filter(([k]) => k !== 'timeline' && k !== 'awaitingFundsInstructions')) as Omit<typeof Transfer.properties, 'timeline' | 'awaitingFundsInstructions'>,
  { title: 'TransferSummary', additionalProperties: false, description: 'A transfer as listed: everything but the timeline and funding instructions (GET the transfer for those)' },
);
export type TransferSummary = Static<typeof TransferSummary>;

export const TransferList = ListOf(TransferSummary, 'TransferList');

export const TransferListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(StringEnum(TRANSFER_STATUSES)),
    entityId: Type.Optional(Type.String({ format: 'uuid', description: 'Only the transfers of this entity; an entity your organization does not have is 404 not_found' })),
    createdFrom: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after (ISO 8601)' })),
    createdTo: Type.Optional(Type.String({ format: 'date-time', description: 'Created before (ISO 8601)' })),
  },
  { additionalProperties: false },
);
export type TransferListQuery = Static<typeof TransferListQuery>;

export const OpsTransferListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(StringEnum(TRANSFER_STATUSES, { description: 'Default IN_REVIEW: the review queue' })),
    organizationId: Type.Optional(Type.String({ format: 'uuid', description: "Only this organization's transfers" })),
  },
  { additionalProperties: false },
);
export type OpsTransferListQuery = Static<typeof OpsTransferListQuery>;

/** What the operator sees in the queue: the transfer as listed, and the organization it belongs to. */
export const OpsTransferSummary = Type.Object({ ...TransferSummary.properties, organizationId: Uuid }, { title: 'OpsTransferSummary', additionalProperties: false });
export const OpsTransferList = ListOf(OpsTransferSummary, 'OpsTransferList');

// Not format-checked: an id that is not a transfer of yours answers 404 whatever its shape.
export const TransferParams = Type.Object({ transferId: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false });

export const FundBody = Type.Object(
  { amount: Type.Optional(Type.String({ pattern: '^\\d+(\\.\\d+)?$', description: 'Amount arriving, in the source asset; it must be the exact amount to fund (default: that amount), with no more fraction digits than the asset has, as for a quote amount (422 validation_error at `amount` otherwise)' })) },
  { additionalProperties: false, title: 'SandboxFundRequest' },
);

export const ReviewBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Why, recorded in the timeline' })) },
  { additionalProperties: false },
);
