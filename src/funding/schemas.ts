import { Type } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { FIAT_METHODS } from '../providers/adapter.ts';
import { PROOF_CONTENT_TYPES, PROOF_MAX_BYTES } from './proof-files.ts';
import { SESSION_STATUSES } from './repository.ts';

// Not format-checked, as on the transfer routes: an id that is not a transfer of yours is 404.
export const TransferParams = Type.Object({ transferId: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false });

const Amount = Type.String({ description: "The transfer's quoted source amount: send exactly this, as a decimal string at the asset's precision" });

export const FiatFundingInstructions = Type.Object(
  {
    type: Type.Literal('FIAT'),
    rail: Type.Object({ type: Type.Literal('FIAT'), country: Type.String(), currency: Type.String(), method: StringEnum(FIAT_METHODS) }),
    exactAmount: Amount,
    currency: Type.String({ description: 'ISO 4217 code of exactAmount' }),
    reference: Type.String({ maxLength: 35, description: 'Payment reference unique to this transfer; put it in the payment so it can be matched' }),
    beneficiary: Type.Object({ name: Type.String({ description: "The collecting provider's account name" }) }),
    routingNumber: Type.Optional(Type.String({ description: 'ACH, WIRE: ABA routing number' })),
    accountNumber: Type.Optional(Type.String({ description: 'ACH, WIRE, SWIFT (non-IBAN countries), LOCAL: virtual account number unique to this session' })),
    accountType: Type.Optional(Type.Literal('CHECKING', { description: 'ACH' })),
    iban: Type.Optional(Type.String({ description: 'SEPA, SWIFT (IBAN countries): virtual IBAN unique to this session' })),
    bic: Type.Optional(Type.String({ description: 'SEPA, SWIFT' })),
    sortCode: Type.Optional(Type.String({ description: 'GB LOCAL (Faster Payments)' })),
    clabe: Type.Optional(Type.String({ description: 'SPEI: CLABE unique to this session' })),
    pixKey: Type.Optional(Type.String({ description: 'PIX: random (EVP) key unique to this session' })),
    pixKeyType: Type.Optional(Type.Literal('EVP')),
    pixCopiaECola: Type.Optional(Type.String({ description: 'PIX: one-time BR Code ("copia e cola") carrying the key, exact amount and reference' })),
    bankCode: Type.Optional(Type.String({ description: 'NG, PH LOCAL' })),
    cbu: Type.Optional(Type.String({ description: 'AR LOCAL' })),
    mobileNetwork: Type.Optional(Type.Literal('MPESA', { description: 'KE LOCAL' })),
    paybillNumber: Type.Optional(Type.String({ description: 'KE LOCAL: M-PESA business number; accountNumber identifies the payment' })),
  },
  { title: 'FiatFundingInstructions', additionalProperties: false },
);

export const CryptoFundingInstructions = Type.Object(
  {
    type: Type.Literal('CRYPTO'),
    rail: Type.Object({ type: Type.Literal('CRYPTO'), blockchain: Type.String(), asset: Type.String() }),
    blockchain: Type.String(),
    asset: Type.String(),
    network: StringEnum(['mainnet', 'testnet'] as const, { description: 'testnet in the sandbox, mainnet in production' }),
    exactAmount: Amount,
    depositAddress: Type.String({
      description: 'Unique to this transfer: EVM chains an EIP-55 checksummed address, BITCOIN a bech32 P2WPKH address; STELLAR the shared deposit account, told apart by memo',
    }),
    memo: Type.Optional(Type.String({ description: 'Required where present (STELLAR): a deposit without it cannot be matched' })),
    memoType: Type.Optional(Type.Literal('ID')),
    tag: Type.Optional(Type.String({ description: 'Destination tag, for chains that use one' })),
  },
  { title: 'CryptoFundingInstructions', additionalProperties: false },
);

export const FundingInstructions = Type.Union([FiatFundingInstructions, CryptoFundingInstructions], {
  title: 'FundingInstructions',
  description: 'Where to send the funds for this transfer only; never reused for another transfer, even on the same rail.',
});

export const FundingSession = Type.Object(
  {
    id: Uuid,
    transferId: Uuid,
    status: StringEnum(SESSION_STATUSES, { description: 'ACTIVE until it expires (EXPIRED) or its funds arrive (COMPLETED)' }),
    instructions: FundingInstructions,
    expiresAt: Timestamp,
    createdAt: Timestamp,
  },
  { title: 'FundingSession', additionalProperties: false },
);

export const FundingProof = Type.Object(
  {
    id: Uuid,
    transferId: Uuid,
    fileName: Type.String({ description: 'The name the client gave the file (display only)' }),
    contentType: StringEnum(PROOF_CONTENT_TYPES, { description: "Decided by the file's magic bytes, not by the client's Content-Type or file name" }),
    sizeBytes: Type.Integer({ minimum: 1, maximum: PROOF_MAX_BYTES }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the stored bytes' }),
    uploadedAt: Timestamp,
  },
  { title: 'FundingProof', additionalProperties: false },
);

/** For the OpenAPI document only: the upload is parsed as a stream, not validated as a body. */
export const FundingProofUpload = Type.Object(
  { file: Type.String({ format: 'binary', description: 'A PDF, JPEG or PNG of up to 10 MB' }) },
  { required: ['file'] },
);
