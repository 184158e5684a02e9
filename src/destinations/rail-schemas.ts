// The one source of destination schemas: for each fiat rail, the JSON Schema of an account's
// `details` and `beneficiary`; for each blockchain, the JSON Schema of a wallet's address, memo
// and tag. The same schemas are served by GET /v1/fiat-accounts/schemas and
// GET /v1/crypto-wallets/schemas and validate every create and edit, so they cannot drift.
// Which rails exist is the rail directory's business (RailService); this file only knows what a
// destination on a rail must look like.
import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Type } from 'typebox';
import type { TSchema } from 'typebox';
import { getCountrySpecifications, isSEPACountry } from 'ibantools';
import type { Environment } from '../platform/config.ts';
import type { FiatMethod } from '../providers/adapter.ts';
import { validationError } from '../platform/http/errors.ts';
import type { FieldProblem } from '../platform/http/errors.ts';
import { describeAjvErrors } from '../platform/http/validation.ts';
import { StringEnum } from '../platform/http/schemas.ts';
import * as ids from './identifiers.ts';
import type { Check } from './identifiers.ts';
import { eip55Checksum } from './check-digits.ts';

export interface FiatRailKey {
  country: string;
  currency: string;
  method: FiatMethod;
}

type Fields = Record<string, unknown>;

interface FiatRailDefinition {
  name: string;
  details: TSchema;
  beneficiary: TSchema;
  /** Rules across fields or against the rail; may rewrite a value to its canonical form. */
  refine?: (details: Fields, rail: FiatRailKey) => FieldProblem[];
}

/** A JSON Schema document as served to clients. */
export type JsonSchema = Record<string, unknown>;
const asJson = (schema: TSchema): JsonSchema => schema as unknown as JsonSchema;

export interface FiatRailSchema {
  rail: FiatRailKey;
  name: string;
  currency: { code: string; minorUnits: number };
  details: JsonSchema;
  beneficiary: JsonSchema;
}

export type MemoRule = 'REQUIRED' | 'OPTIONAL' | 'NOT_SUPPORTED';

export interface ChainSchema {
  blockchain: string;
  addressFormat: string;
  memo: MemoRule;
  tag: MemoRule;
  /** JSON Schema of {address, memo, tag} on this chain. */
  schema: JsonSchema;
}

// ---------------------------------------------------------------------------------------------
// Formats: each names a check from identifiers.ts, so the served schema says which rule applies.

// Identifiers people often write with spaces or in lower case; stored compact and upper case.
const COMPACT_FORMATS = new Set(['iban', 'bic', 'clabe', 'cbu']);

function formatChecks(env: Environment): Record<string, Check> {
  return {
    iban: ids.iban,
    bic: ids.bic,
    'aba-routing-number': ids.abaRoutingNumber,
    clabe: ids.clabeNumber,
    cbu: ids.cbu,
    'country-code': ids.countryCode,
    'evm-address': ids.evmAddress,
    'bitcoin-address': ids.bitcoinAddress(env === 'production' ? ['mainnet'] : ['mainnet', 'testnet']),
    'stellar-account': ids.stellarAccount,
    // A blank memo satisfies "required" in form only: the receiving exchange could not credit it.
    'stellar-memo': (v) => (v.trim() === '' ? 'must not be blank' : Buffer.byteLength(v, 'utf8') <= 28 ? null : 'is longer than a Stellar text memo (28 bytes)'),
  };
}

// ---------------------------------------------------------------------------------------------
// Fiat rails

const Digits = (min: number, max: number, description: string) =>
  Type.String({ pattern: min === max ? `^[0-9]{${min}}$` : `^[0-9]{${min},${max}}$`, description });

const Iban = Type.String({ format: 'iban', description: 'IBAN; spaces allowed, stored compact. Country and check digits are verified (ibantools).' });
const Bic = Type.String({ format: 'bic', description: 'BIC (SWIFT code) of the beneficiary bank, 8 or 11 characters, verified with ibantools; its country must be the rail country.' });
const AbaRouting = Type.String({ format: 'aba-routing-number', description: 'ABA routing transit number: 9 digits with a valid 3-7-1 checksum.' });
const UsAccountNumber = Digits(4, 17, 'US bank account number, 4 to 17 digits');

const BeneficiaryAddress = Type.Object(
  {
    line1: Type.String({ minLength: 1, maxLength: 140 }),
    line2: Type.Optional(Type.String({ minLength: 1, maxLength: 140 })),
    city: Type.String({ minLength: 1, maxLength: 100 }),
    region: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    postalCode: Type.Optional(Type.String({ minLength: 1, maxLength: 20 })),
    country: Type.String({ format: 'country-code', description: 'ISO 3166-1 alpha-2' }),
  },
  { additionalProperties: false },
);

const beneficiary = (addressRequired: boolean) =>
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 140, description: 'Account holder name as the bank knows it' }),
      type: Type.Optional(StringEnum(['INDIVIDUAL', 'BUSINESS'] as const)),
      address: addressRequired ? BeneficiaryAddress : Type.Optional(BeneficiaryAddress),
    },
    { additionalProperties: false, description: addressRequired ? 'The account holder; this rail requires their postal address.' : 'The account holder.' },
  );

const details = (properties: Record<string, TSchema>, description: string) => Type.Object(properties, { additionalProperties: false, description });

/** A field whose value names a country (IBAN, BIC) must name the rail's country. */
const inRailCountry = (field: string, countryOf: (value: string) => string, what: string) => (d: Fields, rail: FiatRailKey): FieldProblem[] => {
  const value = d[field];
  if (typeof value !== 'string') return [];
  const country = countryOf(value);
  return country === rail.country ? [] : [{ path: `details.${field}`, message: `is ${what} in ${country}; this rail pays accounts in ${rail.country}` }];
};

const refineAll = (...rules: Array<NonNullable<FiatRailDefinition['refine']>>): FiatRailDefinition['refine'] => (d, rail) => rules.flatMap((rule) => rule(d, rail));

const ibanInCountry = inRailCountry('iban', ids.ibanCountry, 'an IBAN');
const bicInCountry = inRailCountry('bic', ids.bicCountry, 'a BIC');

const ACH: FiatRailDefinition = {
  name: 'ACH (US domestic batch transfer)',
  details: details(
    { routingNumber: AbaRouting, accountNumber: UsAccountNumber, accountType: StringEnum(['CHECKING', 'SAVINGS'] as const) },
    'US bank account reached by ACH.',
  ),
  beneficiary: beneficiary(false),
};

const WIRE: FiatRailDefinition = {
  name: 'Fedwire (US domestic wire)',
  details: details({ routingNumber: AbaRouting, accountNumber: UsAccountNumber }, 'US bank account reached by Fedwire.'),
  beneficiary: beneficiary(true),
};

const SEPA: FiatRailDefinition = {
  name: 'SEPA credit transfer',
  details: details({ iban: Iban, bic: Type.Optional(Bic) }, 'Euro account in a SEPA country; the IBAN must belong to the rail country.'),
  beneficiary: beneficiary(false),
  refine: refineAll(ibanInCountry, bicInCountry),
};

function swift(country: string): FiatRailDefinition {
  // Where the country issues IBANs (e.g. AE, CH) the account is an IBAN; elsewhere (SG, JP) a local account number.
  const usesIban = getCountrySpecifications()[country]?.IBANRegistry === true;
  return {
    name: 'SWIFT international wire',
    details: usesIban
      ? details({ bic: Bic, iban: Iban }, `Account in ${country}, which uses IBANs.`)
      : details({ bic: Bic, accountNumber: Type.String({ pattern: '^[A-Z0-9]{1,34}$', description: 'Account number at the beneficiary bank (letters and digits, up to 34)' }) }, `Account in ${country}.`),
    beneficiary: beneficiary(true),
    refine: usesIban ? refineAll(bicInCountry, ibanInCountry) : bicInCountry,
  };
}

const PIX: FiatRailDefinition = {
  name: 'PIX (Brazil instant payments)',
  details: details(
    {
      pixKey: Type.String({ minLength: 1, maxLength: 77, description: 'The PIX key; stored in its canonical DICT form. A PHONE key is written +55…' }),
      pixKeyType: StringEnum(ids.PIX_KEY_TYPES, { description: 'Kind of key; the key must be a valid one of this kind (CPF and CNPJ check digits verified)' }),
    },
    'Brazilian account reached by its PIX key.',
  ),
  beneficiary: beneficiary(false),
  refine: (d) => {
    const key = ids.pixKey(String(d.pixKey));
    if (!key || key.type !== d.pixKeyType) return [{ path: 'details.pixKey', message: `is not a valid ${String(d.pixKeyType)} PIX key` }];
    d.pixKey = key.value;
    return [];
  },
};

const SPEI: FiatRailDefinition = {
  name: 'SPEI (Mexico interbank transfer)',
  details: details({ clabe: Type.String({ format: 'clabe', description: '18-digit CLABE; bank code and check digit verified (clabe-validator)' }) }, 'Mexican account reached by its CLABE.'),
  beneficiary: beneficiary(false),
};

const LOCAL: Record<string, FiatRailDefinition> = {
  'GB/GBP': {
    name: 'Faster Payments (UK)',
    details: details({ sortCode: Digits(6, 6, 'Sort code, 6 digits without dashes'), accountNumber: Digits(8, 8, 'Account number, 8 digits') }, 'UK account reached by sort code and account number.'),
    beneficiary: beneficiary(false),
  },
  'NG/NGN': {
    name: 'NIP (Nigeria instant payments)',
    details: details({ bankCode: Digits(3, 3, 'CBN bank code, 3 digits'), accountNumber: Digits(10, 10, '10-digit NUBAN; its check digit is verified against the bank code') }, 'Nigerian bank account (NUBAN).'),
    beneficiary: beneficiary(false),
    refine: (d) => {
      const problem = ids.nubanProblem(String(d.bankCode), String(d.accountNumber));
      return problem ? [{ path: 'details.accountNumber', message: problem }] : [];
    },
  },
  'KE/KES': {
    name: 'Mobile money (Kenya)',
    details: details(
      {
        phoneNumber: Type.String({ pattern: '^\\+254[17][0-9]{8}$', description: 'Kenyan mobile number in E.164 form, +2547… or +2541…' }),
        network: StringEnum(['MPESA', 'AIRTEL'] as const),
      },
      'Kenyan mobile money wallet.',
    ),
    beneficiary: beneficiary(false),
  },
  'PH/PHP': {
    name: 'InstaPay (Philippines)',
    details: details(
      {
        bankCode: Type.String({ format: 'bic', description: 'BIC of the receiving InstaPay participant, e.g. BNORPHMM' }),
        accountNumber: Digits(10, 16, 'Account number, 10 to 16 digits'),
      },
      'Philippine bank account reached by InstaPay.',
    ),
    beneficiary: beneficiary(false),
    refine: inRailCountry('bankCode', ids.bicCountry, 'a BIC'),
  },
  'AR/ARS': {
    name: 'Transferencia inmediata (Argentina)',
    details: details({ cbu: Type.String({ format: 'cbu', description: '22-digit CBU; both check digits verified' }) }, 'Argentine account reached by its CBU.'),
    beneficiary: beneficiary(false),
  },
};

function fiatDefinition(rail: FiatRailKey): FiatRailDefinition | null {
  const { country, currency, method } = rail;
  const pair = `${country}/${currency}`;
  switch (method) {
    case 'ACH':
      return pair === 'US/USD' ? ACH : null;
    case 'WIRE':
      return pair === 'US/USD' ? WIRE : null;
    case 'SEPA':
      return currency === 'EUR' && isSEPACountry(country) ? SEPA : null;
    case 'SWIFT':
      return ids.countryCode(country) === null && ids.currencyCode(currency) === null ? swift(country) : null;
    case 'PIX':
      return pair === 'BR/BRL' ? PIX : null;
    case 'SPEI':
      return pair === 'MX/MXN' ? SPEI : null;
    case 'LOCAL':
      return LOCAL[pair] ?? null;
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Blockchains

const EVM_ADDRESS =
  '0x followed by 40 hexadecimal digits. A mixed-case address must match its EIP-55 checksum; an all-lowercase or ' +
  'all-uppercase address carries no checksum and is accepted. Stored in EIP-55 checksum form.';

interface ChainDefinition extends Omit<ChainSchema, 'schema'> {
  address: TSchema;
  memoSchema?: TSchema;
  /** The stored form of a valid address. */
  normalize?: (address: string) => string;
}

function chainDefinitions(env: Environment): ChainDefinition[] {
  const evm = (blockchain: string) => ({
    blockchain,
    addressFormat: EVM_ADDRESS,
    memo: 'NOT_SUPPORTED' as const,
    tag: 'NOT_SUPPORTED' as const,
    address: Type.String({ format: 'evm-address', description: EVM_ADDRESS }),
    normalize: eip55Checksum,
  });
  const bitcoinFormat =
    env === 'production'
      ? 'A Bitcoin mainnet address: base58check (1…, 3…) or bech32/bech32m (bc1…, stored in lower case), checksum verified.'
      : 'A Bitcoin address: base58check (1…, 3…) or bech32/bech32m (bc1…, stored in lower case), checksum verified. The sandbox also accepts testnet addresses (m…, n…, 2…, tb1…); production accepts mainnet only.';
  const stellarFormat = 'A Stellar account address: G followed by 55 base32 characters, StrKey checksum verified. Muxed (M…) addresses are not accepted; use a memo.';
  return [
    evm('ETHEREUM'),
    evm('POLYGON'),
    {
      blockchain: 'BITCOIN',
      addressFormat: bitcoinFormat,
      memo: 'NOT_SUPPORTED',
      tag: 'NOT_SUPPORTED',
      address: Type.String({ format: 'bitcoin-address', description: bitcoinFormat }),
      normalize: ids.bitcoinCanonical,
    },
    {
      blockchain: 'STELLAR',
      addressFormat: stellarFormat,
      memo: 'REQUIRED',
      tag: 'NOT_SUPPORTED',
      address: Type.String({ format: 'stellar-account', description: stellarFormat }),
      memoSchema: Type.String({
        minLength: 1,
        format: 'stellar-memo',
        description: 'Required on STELLAR: exchanges and custodians credit deposits by memo. A text memo of up to 28 bytes (an ID memo is written as its digits).',
      }),
    },
  ];
}

// ---------------------------------------------------------------------------------------------

export class RailSchemaRegistry {
  readonly #ajv: Ajv;
  readonly #checks: Record<string, Check>;
  readonly #fiat = new Map<string, FiatRailDefinition | null>();
  readonly #chains = new Map<string, ChainSchema>();
  readonly #normalizers = new Map<string, (address: string) => string>();
  readonly #compiled = new WeakMap<object, ValidateFunction>();

  constructor(env: Environment) {
    this.#checks = formatChecks(env);
    // verbose keeps the failing value on each error, so a format failure can say what is wrong with it.
    this.#ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
    for (const [name, check] of Object.entries(this.#checks)) this.#ajv.addFormat(name, { type: 'string', validate: (v: string) => check(v) === null });
    for (const { address, memoSchema, normalize, ...chain } of chainDefinitions(env)) {
      const properties: Record<string, TSchema> = { address };
      if (memoSchema) properties.memo = chain.memo === 'REQUIRED' ? memoSchema : Type.Optional(memoSchema);
      const schema = Type.Object(properties, { additionalProperties: false, description: `Wallet instructions on ${chain.blockchain}` });
      this.#chains.set(chain.blockchain, { ...chain, schema: asJson(schema) });
      if (normalize) this.#normalizers.set(chain.blockchain, normalize);
    }
  }

  /** The destination schema of a fiat rail, or null when no destination can be saved on it. */
  fiat(rail: FiatRailKey): FiatRailSchema | null {
    const definition = this.#fiatDefinition(rail);
    const minorUnits = ids.minorUnitsOf(rail.currency);
    if (!definition || minorUnits === null) return null;
    return { rail: { ...rail }, name: definition.name, currency: { code: rail.currency, minorUnits }, details: asJson(definition.details), beneficiary: asJson(definition.beneficiary) };
  }

  chain(blockchain: string): ChainSchema | null {
    return this.#chains.get(blockchain) ?? null;
  }

  chains(): ChainSchema[] {
    return [...this.#chains.values()];
  }

  /** Problems with the rail's own codes (ISO 3166-1 country, ISO 4217 currency), as field paths under `at`. */
  railProblems(rail: FiatRailKey, at: string): FieldProblem[] {
    const problems: FieldProblem[] = [];
    const country = ids.countryCode(rail.country);
    const currency = ids.currencyCode(rail.currency);
    if (country) problems.push({ path: `${at}.country`, message: country });
    if (currency) problems.push({ path: `${at}.currency`, message: currency });
    return problems;
  }

  /** Validates a fiat account's instructions against its rail's schema; answers them normalized. Throws 422 validation_error. */
  validateFiat(rail: FiatRailKey, input: { details: Fields; beneficiary: Fields }): { details: Fields; beneficiary: Fields } {
    const definition = this.#fiatDefinition(rail);
    if (!definition) throw new Error(`no destination schema for ${rail.country}/${rail.currency}/${rail.method}`);
    const details = compact(definition.details, input.details);
    const beneficiary = structuredClone(input.beneficiary);
    const problems = [...this.#validate(definition.details, details, 'details'), ...this.#validate(definition.beneficiary, beneficiary, 'beneficiary')];
    if (!problems.length && definition.refine) problems.push(...definition.refine(details, rail));
    if (problems.length) throw validationError(problems);
    return { details, beneficiary };
  }

  /** Validates a wallet's address, memo and tag for its blockchain; answers them normalized. */
  validateWallet(blockchain: string, input: { address: string; memo: string | null; tag: string | null }): { address: string; memo: string | null; tag: string | null } {
    const chain = this.chain(blockchain);
    if (!chain) throw new Error(`no wallet schema for ${blockchain}`);
    const problems: FieldProblem[] = [];
    const value: Fields = { address: input.address };
    for (const field of ['memo', 'tag'] as const) {
      const given = input[field];
      if (given === null) continue;
      if (chain[field] === 'NOT_SUPPORTED') problems.push({ path: field, message: `is not used on ${blockchain}; leave it out` });
      else value[field] = given;
    }
    problems.push(...this.#validate(chain.schema, value, ''));
    if (problems.length) throw validationError(problems);
    const address = this.#normalizers.get(blockchain)?.(input.address) ?? input.address;
    return { address, memo: (value.memo as string | undefined) ?? null, tag: (value.tag as string | undefined) ?? null };
  }

  #fiatDefinition(rail: FiatRailKey): FiatRailDefinition | null {
    const key = `${rail.country}/${rail.currency}/${rail.method}`;
    if (!this.#fiat.has(key)) this.#fiat.set(key, fiatDefinition(rail));
    return this.#fiat.get(key)!;
  }

  #validate(schema: TSchema, value: unknown, prefix: string): FieldProblem[] {
    let validate = this.#compiled.get(schema);
    if (!validate) {
      validate = this.#ajv.compile(schema);
      this.#compiled.set(schema, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).flatMap((e: ErrorObject) => {
      const problems =
        e.keyword === 'format' && this.#checks[(e.params as { format: string }).format]
          ? [{ path: e.instancePath.split('/').filter(Boolean).join('.'), message: this.#checks[(e.params as { format: string }).format]!(String(e.data)) ?? 'is invalid' }]
          : describeAjvErrors([e], 'body');
      return problems.map((p) => ({ ...p, path: [prefix, p.path].filter(Boolean).join('.') }));
    });
  }
}

/** Copies details, writing compact identifiers (IBAN, BIC, CLABE, CBU) without spaces and in upper case. */
function compact(schema: TSchema, input: Fields): Fields {
  const out = structuredClone(input);
  const properties = (schema as { properties?: Record<string, { format?: string }> }).properties ?? {};
  for (const [name, property] of Object.entries(properties)) {
    const value = out[name];
    if (typeof value === 'string' && property.format && COMPACT_FORMATS.has(property.format)) out[name] = value.replace(/\s+/g, '').toUpperCase();
  }
  return out;
}
