import { Type } from 'typebox';
import { ListOf, PageQuery, StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { FIAT_METHODS } from '../providers/adapter.ts';

export const RELATIONSHIPS = ['SELF', 'THIRD_PARTY'] as const;
/** Versions are stored as PostgreSQL integers; a larger number names no version. */
export const MAX_VERSION = 2_147_483_647;
export const CREATOR_TYPES = ['USER', 'API_KEY'] as const;

const VERSIONING =
  'Destinations are versioned: a change to the instructions (every field except nickname) creates version n+1 with the same id; ' +
  'earlier versions stay readable under /versions, and a transfer keeps the version it was created with. ' +
  'PATCH replaces each top-level field it names as a whole; a PATCH that changes nothing but nickname keeps the version.';

const Relationship = StringEnum(RELATIONSHIPS, {
  description: "SELF: the entity's own account (reported as OWN_ACCOUNT_TRANSFER); THIRD_PARTY: someone else's (BENEFICIARY_PAYMENT)",
});
const Nickname = Type.String({ minLength: 1, maxLength: 100, description: 'Your label for the destination; changing it makes no new version' });
const NullableNickname = Type.Union([Nickname, Type.Null()], { description: 'Your label for the destination (null clears it); changing it makes no new version' });
const FreeObject = (description: string) => Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description });

const Details = FreeObject('Account identifiers; their fields depend on the rail: see GET /v1/fiat-accounts/schemas');
const Beneficiary = FreeObject('The account holder (name, type, address); see GET /v1/fiat-accounts/schemas');

export const FiatRail = Type.Object(
  {
    country: Type.String({ minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2' }),
    currency: Type.String({ minLength: 3, maxLength: 3, description: 'ISO 4217' }),
    method: StringEnum(FIAT_METHODS),
  },
  { additionalProperties: false, title: 'FiatRailRef' },
);

const CreatedBy = Type.Object(
  { type: StringEnum(CREATOR_TYPES), id: Uuid },
  { description: 'Who created this version: a user (id of the user) or an API key (id of the key)' },
);

const VersionStamp = {
  version: Type.Integer({ minimum: 1, description: 'Current version; rises with every change of instructions' }),
  versionCreatedAt: Timestamp,
  versionCreatedBy: CreatedBy,
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

// --- fiat accounts ---------------------------------------------------------------------------

export const CreateFiatAccountBody = Type.Object(
  { entityId: Uuid, rail: FiatRail, details: Details, beneficiary: Beneficiary, relationship: Relationship, nickname: Type.Optional(Nickname) },
  { additionalProperties: false, title: 'CreateFiatAccount', description: 'details and beneficiary are validated against the schema of the chosen rail.' },
);

export const UpdateFiatAccountBody = Type.Object(
  {
    rail: Type.Optional(FiatRail),
    details: Type.Optional(Details),
    beneficiary: Type.Optional(Beneficiary),
    relationship: Type.Optional(Relationship),
    nickname: Type.Optional(NullableNickname),
  },
  { additionalProperties: false, minProperties: 1, title: 'UpdateFiatAccount', description: VERSIONING },
);

const FiatInstructions = { relationship: Relationship, rail: FiatRail, details: Details, beneficiary: Beneficiary };

export const FiatAccount = Type.Object(
  { id: Uuid, entityId: Uuid, nickname: Type.Union([Type.String(), Type.Null()]), ...FiatInstructions, ...VersionStamp },
  { title: 'FiatAccount', description: VERSIONING },
);

export const FiatAccountVersion = Type.Object(
  { id: Uuid, version: Type.Integer({ minimum: 1 }), entityId: Uuid, ...FiatInstructions, createdAt: Timestamp, createdBy: CreatedBy },
  { title: 'FiatAccountVersion', description: 'One immutable version of a fiat account\'s instructions.' },
);

export const FiatAccountList = ListOf(FiatAccount, 'FiatAccountList');
export const FiatAccountVersionList = ListOf(FiatAccountVersion, 'FiatAccountVersionList');

export const FiatSchemaQuery = Type.Object(
  {
    country: Type.String({ minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2, e.g. DE' }),
    currency: Type.String({ minLength: 3, maxLength: 3, description: 'ISO 4217, e.g. EUR' }),
    method: StringEnum(FIAT_METHODS),
  },
  { additionalProperties: false },
);

export const FiatRailSchemaResponse = Type.Object(
  {
    rail: FiatRail,
    name: Type.String({ description: 'The scheme this rail pays through' }),
    currency: Type.Object({ code: Type.String(), minorUnits: Type.Integer({ description: 'ISO 4217 decimal places' }) }),
    details: FreeObject('JSON Schema (2020-12) of `details` on this rail. Custom formats name the checks applied: iban, bic, aba-routing-number, clabe, cbu, country-code.'),
    beneficiary: FreeObject('JSON Schema (2020-12) of `beneficiary` on this rail'),
  },
  { title: 'FiatRailDestinationSchema' },
);

// --- crypto wallets --------------------------------------------------------------------------

const Blockchain = Type.String({ pattern: '^[A-Z][A-Z0-9_]{1,31}$', description: 'e.g. ETHEREUM, POLYGON, BITCOIN, STELLAR' });
const Asset = Type.String({ pattern: '^[A-Z0-9]{2,10}$', description: 'e.g. USDC, ETH, BTC' });
const Address = Type.String({ minLength: 1, maxLength: 128, description: 'Checked against the blockchain\'s address format: see GET /v1/crypto-wallets/schemas' });
const Memo = Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()], { description: 'Required where the blockchain needs one (STELLAR); refused where it has none' });
const Tag = Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()], { description: 'Destination tag, where the blockchain uses one; refused elsewhere' });

export const CreateCryptoWalletBody = Type.Object(
  {
    entityId: Uuid,
    blockchain: Blockchain,
    asset: Asset,
    address: Address,
    memo: Type.Optional(Memo),
    tag: Type.Optional(Tag),
    relationship: Relationship,
    nickname: Type.Optional(Nickname),
  },
  { additionalProperties: false, title: 'CreateCryptoWallet' },
);

export const UpdateCryptoWalletBody = Type.Object(
  {
    blockchain: Type.Optional(Blockchain),
    asset: Type.Optional(Asset),
    address: Type.Optional(Address),
    memo: Type.Optional(Memo),
    tag: Type.Optional(Tag),
    relationship: Type.Optional(Relationship),
    nickname: Type.Optional(NullableNickname),
  },
  { additionalProperties: false, minProperties: 1, title: 'UpdateCryptoWallet', description: VERSIONING },
);

const WalletInstructions = {
  relationship: Relationship,
  blockchain: Type.String(),
  asset: Type.String(),
  address: Type.String(),
  memo: Type.Union([Type.String(), Type.Null()]),
  tag: Type.Union([Type.String(), Type.Null()]),
};

export const CryptoWallet = Type.Object(
  { id: Uuid, entityId: Uuid, nickname: Type.Union([Type.String(), Type.Null()]), ...WalletInstructions, ...VersionStamp },
  { title: 'CryptoWallet', description: VERSIONING },
);

export const CryptoWalletVersion = Type.Object(
  { id: Uuid, version: Type.Integer({ minimum: 1 }), entityId: Uuid, ...WalletInstructions, createdAt: Timestamp, createdBy: CreatedBy },
  { title: 'CryptoWalletVersion', description: 'One immutable version of a crypto wallet\'s instructions.' },
);

export const CryptoWalletList = ListOf(CryptoWallet, 'CryptoWalletList');
export const CryptoWalletVersionList = ListOf(CryptoWalletVersion, 'CryptoWalletVersionList');

const MemoRule = StringEnum(['REQUIRED', 'OPTIONAL', 'NOT_SUPPORTED'] as const);

export const CryptoWalletSchemas = Type.Object(
  {
    blockchains: Type.Array(
      Type.Object({
        blockchain: Type.String(),
        assets: Type.Array(Type.String(), { description: 'Assets a wallet on this blockchain can receive here' }),
        addressFormat: Type.String(),
        memo: MemoRule,
        tag: MemoRule,
        schema: FreeObject('JSON Schema (2020-12) of {address, memo, tag} on this blockchain. Custom formats name the checks: evm-address, bitcoin-address, stellar-account, stellar-memo.'),
      }),
    ),
  },
  { title: 'CryptoWalletSchemas' },
);

// --- shared ----------------------------------------------------------------------------------

export const DestinationListQuery = Type.Object(
  { ...PageQuery, entityId: Type.Optional(Type.String({ format: 'uuid', description: 'Only the destinations of this entity; an entity your organization does not have is 404 not_found' })) },
  { additionalProperties: false },
);
export const VersionListQuery = Type.Object(PageQuery, { additionalProperties: false });
export const DestinationIdParams = Type.Object({ id: Uuid });
export const VersionParams = Type.Object({ id: Uuid, version: Type.Integer({ minimum: 1, maximum: MAX_VERSION }) });
