// Funding instructions: where and how the customer sends the money for one transfer. Every set is
// fresh — its own payment reference and its own virtual account or deposit address — so an
// incoming payment identifies exactly one transfer and instructions are never reused, even on
// the same rail (SPEC.md "Funding instructions"). The database enforces that with unique
// constraints on the reference and on depositKey; these generators only make collisions
// astronomically unlikely.
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { composeIBAN, getCountrySpecifications, isValidIBAN } from 'ibantools';
import { clabe } from 'clabe-validator';
import { bech32 } from 'bech32';
import type { CryptoRail, FiatRail, Rail } from '../providers/adapter.ts';
import type { Environment } from '../platform/config.ts';
// The same check-digit code that validates saved destinations, so every number handed out here
// passes the validation a customer's own account would.
import { abaCheckDigit, base32Encode, cbuCheckDigits, crc16CcittFalse, eip55Checksum, nubanCheckDigit, stellarAccountId } from '../destinations/check-digits.ts';

export interface FiatInstructions {
  type: 'FIAT';
  rail: FiatRail;
  exactAmount: string;
  currency: string;
  /** Unique to the transfer; the payer must quote it so the payment can be matched. */
  reference: string;
  beneficiary: { name: string };
  // Rail-specific account details; which ones are present depends on rail.method (and country).
  routingNumber?: string;
  accountNumber?: string;
  accountType?: 'CHECKING';
  iban?: string;
  bic?: string;
  sortCode?: string;
  clabe?: string;
  pixKey?: string;
  pixKeyType?: 'EVP';
  pixCopiaECola?: string;
  bankCode?: string;
  cbu?: string;
  mobileNetwork?: 'MPESA';
  paybillNumber?: string;
}

export interface CryptoInstructions {
  type: 'CRYPTO';
  rail: CryptoRail;
  blockchain: string;
  asset: string;
  /** mainnet in production; the sandbox hands out test-network addresses where the chain has one. */
  network: 'mainnet' | 'testnet';
  exactAmount: string;
  depositAddress: string;
  /** Present where the chain identifies the deposit by memo rather than by address (STELLAR). */
  memo?: string;
  memoType?: 'ID';
  tag?: string;
}

export type FundingInstructions = FiatInstructions | CryptoInstructions;

export interface GeneratedInstructions {
  instructions: FundingInstructions;
  /** Unique per session across all time (fiat: the payment reference shown; crypto: internal). */
  reference: string;
  /** The deposit coordinates in one canonical string; unique across all sessions ever opened. */
  depositKey: string;
}

export interface InstructionRequest {
  rail: Rail;
  /** The transfer's quoted source amount, already a decimal string at the asset's precision. */
  exactAmount: string;
  /** The collecting provider's account name. */
  beneficiaryName: string;
  env: Environment;
}

export class UnsupportedFundingRail extends Error {}

// ---------------------------------------------------------------- references

/** Crockford's base32 alphabet (no I, L, O, U), so a reference read aloud or retyped survives. */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * "CRD" + 16 base32 characters (80 random bits): 19 characters, letters and digits only, so it
 * fits every rail's reference field (SEPA remittance 140, pain.001 end-to-end 35, PIX txid 25).
 */
export function newReference(): string {
  return `CRD${base32Encode(randomBytes(10), CROCKFORD)}`;
}

const digits = (n: number): string => Array.from({ length: n }, () => String(randomInt(10))).join('');

// ---------------------------------------------------------------- fiat

// The collecting bank identifiers below are the sandbox's own. With real providers the
// virtual account comes from the collecting provider; the shape given to the customer is the same.
const ROUTING_NUMBER = `02600959${abaCheckDigit('02600959')}`;
const GB_SORT_CODE = '401276';
const NG_BANK_CODE = '999';
const PH_BANK_CODE = '9999';
const KE_PAYBILL = '400222';
const SPEI_BANK = 646; // STP, the SPEI participant most virtual CLABEs are issued under
const SPEI_CITY = 180; // Mexico City
const bicFor = (country: string) => `CRDR${country}2X`;

/** Random text matching an ibantools BBAN pattern such as ^[0-9]{10}[A-Z0-9]{11}[0-9]{2}$. */
function randomFromPattern(pattern: string): string {
  const classes: Record<string, string> = { '0-9': '0123456789', 'A-Z': 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'a-z': 'abcdefghijklmnopqrstuvwxyz' };
  let out = '';
  for (const m of pattern.matchAll(/\[([^\]]+)\]\{(\d+)\}/g)) {
    // Where letters or digits are allowed, digits only: an account number people can read out.
    const ranges: string[] = m[1]!.match(/[0-9A-Za-z]-[0-9A-Za-z]/g) ?? [];
    const alphabet = ranges.includes('0-9') ? classes['0-9']! : ranges.map((r) => classes[r] ?? '').join('');
    for (let i = 0; i < Number(m[2]); i++) out += alphabet[randomInt(alphabet.length)];
  }
  return out;
}

/**
 * A virtual IBAN in `country`, valid by the ISO 7064 check digits and by the national BBAN check
 * where the country has one (FR, ES, …). Random BBANs are drawn until the national check passes,
 * about one in a hundred for the countries that have one.
 */
export function virtualIban(country: string): string {
  const spec = getCountrySpecifications()[country];
  if (!spec?.bban_regexp) throw new UnsupportedFundingRail(`No IBAN format is known for ${country}`);
  for (let attempt = 0; attempt < 20_000; attempt++) {
    const iban = composeIBAN({ countryCode: country, bban: randomFromPattern(spec.bban_regexp) });
    if (iban && isValidIBAN(iban)) return iban;
  }
  throw new Error(`could not draw a valid ${country} IBAN`);
}

const usesIban = (country: string) => Boolean(getCountrySpecifications()[country]?.bban_regexp);

/** A NUBAN account number under `bankCode`: a random 9-digit serial and its check digit. */
export function nuban(bankCode: string): string {
  const serial = digits(9);
  return serial + nubanCheckDigit(bankCode, serial);
}

/** An Argentine CBU: a bank block and an account block, each closed by its check digit. */
export function cbu(): string {
  const bank = `2850${digits(3)}`;
  const account = digits(13);
  const check = cbuCheckDigits(bank, account);
  return bank + check.bank + account + check.account;
}

/** A unique CLABE under STP, with its check digit computed by clabe-validator. */
export function virtualClabe(): string {
  return clabe.calculate(SPEI_BANK, SPEI_CITY, Number(`9${digits(10)}`));
}

// EMV "copia e cola" (BR Code) built by hand so the amount goes in as the exact decimal string;
// the library helper takes a JS number.
const tlv = (id: string, value: string) => `${id}${String(value.length).padStart(2, '0')}${value}`;

const brCodeCrc = (text: string) => crc16CcittFalse(Buffer.from(text, 'utf8')).toString(16).toUpperCase().padStart(4, '0');

const ascii = (s: string, max: number) =>
  s.normalize('NFD').replace(/[^\x20-\x7e]/g, '').slice(0, max).trim() || 'CORRIDOR';

/**
 * A one-time ("12") BR Code for the EVP key with the exact amount and the reference as txid, so a
 * payer's banking app fills in everything.
 */
export function pixCopiaECola(key: string, amount: string, merchantName: string, txid: string): string {
  const body =
    tlv('00', '01') +
    tlv('01', '12') +
    tlv('26', tlv('00', 'br.gov.bcb.pix') + tlv('01', key)) +
    tlv('52', '0000') +
    tlv('53', '986') +
    tlv('54', amount) +
    tlv('58', 'BR') +
    tlv('59', ascii(merchantName, 25)) +
    tlv('60', 'SAO PAULO') +
    tlv('62', tlv('05', txid.slice(0, 25))) +
    '6304';
  return body + brCodeCrc(body);
}

function fiatDetails(rail: FiatRail, reference: string, amount: string, beneficiaryName: string): { details: Partial<FiatInstructions>; depositKey: string } {
  const { method, country } = rail;
  switch (method) {
    case 'ACH':
    case 'WIRE': {
      const accountNumber = `77${digits(12)}`;
      return {
        details: { routingNumber: ROUTING_NUMBER, accountNumber, ...(method === 'ACH' ? { accountType: 'CHECKING' as const } : {}) },
        depositKey: `US:${ROUTING_NUMBER}:${accountNumber}`,
      };
    }
    case 'SEPA': {
      const iban = virtualIban(usesIban(country) ? country : 'DE');
      return { details: { iban, bic: bicFor(iban.slice(0, 2)) }, depositKey: `IBAN:${iban}` };
    }
    case 'SWIFT': {
      if (usesIban(country)) {
        const iban = virtualIban(country);
        return { details: { iban, bic: bicFor(country) }, depositKey: `IBAN:${iban}` };
      }
      const accountNumber = `77${digits(12)}`;
      return { details: { bic: bicFor(country), accountNumber }, depositKey: `SWIFT:${bicFor(country)}:${accountNumber}` };
    }
    case 'PIX': {
      // An EVP ("chave aleatória") is a UUID the DICT assigns; a fresh one per session.
      const pixKey = randomUUID();
      return {
        details: { pixKey, pixKeyType: 'EVP', pixCopiaECola: pixCopiaECola(pixKey, amount, beneficiaryName, reference) },
        depositKey: `PIX:${pixKey}`,
      };
    }
    case 'SPEI': {
      const c = virtualClabe();
      return { details: { clabe: c }, depositKey: `CLABE:${c}` };
    }
    case 'LOCAL':
      switch (country) {
        case 'GB': {
          const accountNumber = digits(8);
          return { details: { sortCode: GB_SORT_CODE, accountNumber }, depositKey: `GB:${GB_SORT_CODE}:${accountNumber}` };
        }
        case 'NG': {
          const accountNumber = nuban(NG_BANK_CODE);
          return { details: { bankCode: NG_BANK_CODE, accountNumber }, depositKey: `NG:${NG_BANK_CODE}:${accountNumber}` };
        }
        case 'KE': {
          // M-PESA paybill: the business number is shared, the account number identifies the payment.
          const accountNumber = digits(10);
          return { details: { mobileNetwork: 'MPESA', paybillNumber: KE_PAYBILL, accountNumber }, depositKey: `MPESA:${KE_PAYBILL}:${accountNumber}` };
        }
        case 'AR': {
          const value = cbu();
          return { details: { cbu: value }, depositKey: `CBU:${value}` };
        }
        case 'PH': {
          const accountNumber = digits(12);
          return { details: { bankCode: PH_BANK_CODE, accountNumber }, depositKey: `PH:${PH_BANK_CODE}:${accountNumber}` };
        }
        default: {
          const accountNumber = digits(12);
          return { details: { accountNumber }, depositKey: `${country}:LOCAL:${accountNumber}` };
        }
      }
    default:
      throw new UnsupportedFundingRail(`Funding on ${String(method)} is not supported`);
  }
}

// ---------------------------------------------------------------- crypto

export const EVM_BLOCKCHAINS = new Set(['ETHEREUM', 'POLYGON', 'BASE', 'ARBITRUM', 'OPTIMISM', 'AVALANCHE', 'BSC']);

/** A P2WPKH (witness v0, 20-byte program) bech32 address. */
export function p2wpkh(program20: Uint8Array, hrp: 'bc' | 'tb'): string {
  return bech32.encode(hrp, [0, ...bech32.toWords(program20)]);
}

/**
 * The service's one Stellar deposit account. Stellar exchanges share a single account and tell
 * deposits apart by memo, since every account must hold a reserve; the memo is unique per session.
 */
export const stellarDepositAccount = (env: Environment): string =>
  stellarAccountId(createHash('sha256').update(`corridor:stellar-deposit-account:${env}`).digest());

function cryptoDetails(rail: CryptoRail, env: Environment): { details: Pick<CryptoInstructions, 'depositAddress' | 'memo' | 'memoType' | 'network'>; depositKey: string } {
  const network = env === 'production' ? 'mainnet' : 'testnet';
  if (EVM_BLOCKCHAINS.has(rail.blockchain)) {
    const address = eip55Checksum(`0x${randomBytes(20).toString('hex')}`);
    // One EVM address is the same account on every EVM chain, so uniqueness ignores the chain.
    return { details: { depositAddress: address, network }, depositKey: `EVM:${address.toLowerCase()}` };
  }
  if (rail.blockchain === 'BITCOIN') {
    const address = p2wpkh(randomBytes(20), env === 'production' ? 'bc' : 'tb');
    return { details: { depositAddress: address, network }, depositKey: `BITCOIN:${address}` };
  }
  if (rail.blockchain === 'STELLAR') {
    const account = stellarDepositAccount(env);
    // MEMO_ID is an unsigned 64-bit integer; 15 digits keep it readable and far from collisions.
    const memo = String(randomInt(100_000_000_000_000, 2 ** 48 - 1));
    return { details: { depositAddress: account, memo, memoType: 'ID', network }, depositKey: `STELLAR:${account}:${memo}` };
  }
  throw new UnsupportedFundingRail(`Funding on ${rail.blockchain} is not supported`);
}

// ---------------------------------------------------------------- entry point

export function generateInstructions(request: InstructionRequest): GeneratedInstructions {
  const reference = newReference();
  const { rail } = request;
  if (rail.type === 'FIAT') {
    const { details, depositKey } = fiatDetails(rail, reference, request.exactAmount, request.beneficiaryName);
    const instructions: FiatInstructions = {
      type: 'FIAT',
      rail: { type: 'FIAT', country: rail.country, currency: rail.currency, method: rail.method },
      exactAmount: request.exactAmount,
      currency: rail.currency,
      reference,
      beneficiary: { name: request.beneficiaryName },
      ...details,
    };
    return { instructions, reference, depositKey };
  }
  const { details, depositKey } = cryptoDetails(rail, request.env);
  const instructions: CryptoInstructions = {
    type: 'CRYPTO',
    rail: { type: 'CRYPTO', blockchain: rail.blockchain, asset: rail.asset },
    blockchain: rail.blockchain,
    asset: rail.asset,
    exactAmount: request.exactAmount,
    ...details,
  };
  return { instructions, reference, depositKey };
}
