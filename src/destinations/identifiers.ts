// Checks for the account and address identifiers destinations carry. Each check answers null when
// the value is good, or a short sentence saying what is wrong (it becomes a validation detail).
// Where a well-kept library knows the rule, the library decides; the few rules no library named
// here covers (ABA, NUBAN, CBU, EIP-55, Stellar StrKey) come from check-digits.ts, which funding
// also uses to generate the numbers it hands out.
import { ValidationErrorsIBAN, extractBIC, extractIBAN, validateBIC, validateIBAN } from 'ibantools';
import { clabe } from 'clabe-validator';
import { getPixKeyInfo } from '@brazilian-utils/brazilian-utils';
import { getAddressInfo } from 'bitcoin-address-validation';
import currencyCodes from 'currency-codes';
import iso3166 from 'iso-3166-1';
import { abaCheckDigit, cbuCheckDigits, eip55Checksum, nubanCheckDigit, stellarAccountKey } from './check-digits.ts';

export type Check = (value: string) => string | null;

export const countryCode: Check = (value) =>
  value === value.toUpperCase() && iso3166.whereAlpha2(value) ? null : 'is not an ISO 3166-1 alpha-2 country code';

export const currencyCode: Check = (value) =>
  value === value.toUpperCase() && currencyCodes.code(value) ? null : 'is not an ISO 4217 currency code';

/** ISO 4217 minor units (decimal places) of a currency, e.g. 2 for EUR, 0 for JPY. */
export const minorUnitsOf = (currency: string): number | null => currencyCodes.code(currency)?.digits ?? null;

const IBAN_PROBLEMS: Partial<Record<ValidationErrorsIBAN, string>> = {
  [ValidationErrorsIBAN.NoIBANCountry]: 'is not an IBAN: its first two letters are not a country that uses IBANs',
  [ValidationErrorsIBAN.WrongBBANLength]: 'is not a valid IBAN: wrong length for its country',
  [ValidationErrorsIBAN.WrongBBANFormat]: 'is not a valid IBAN: the account part does not have its country\'s format',
  [ValidationErrorsIBAN.ChecksumNotNumber]: 'is not a valid IBAN: characters 3 and 4 must be check digits',
  [ValidationErrorsIBAN.WrongIBANChecksum]: 'is not a valid IBAN: the check digits do not match',
  [ValidationErrorsIBAN.WrongAccountBankBranchChecksum]: 'is not a valid IBAN: the national account check digits do not match',
};

export const iban: Check = (value) => {
  const result = validateIBAN(value);
  return result.valid ? null : (IBAN_PROBLEMS[result.errorCodes[0]!] ?? 'is not a valid IBAN');
};

export const ibanCountry = (value: string): string => extractIBAN(value).countryCode ?? '';

export const bic: Check = (value) => (validateBIC(value).valid ? null : 'is not a valid BIC (8 or 11 characters: bank, country, location, branch)');

export const bicCountry = (value: string): string => extractBIC(value).countryCode ?? '';

// First two digits of a US routing number: Federal Reserve districts (00-12), thrift
// institutions (21-32), electronic transactions (61-72) and traveler's cheques (80).
const ABA_PREFIX = (prefix: number) => prefix <= 12 || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80;

export const abaRoutingNumber: Check = (value) => {
  if (!/^\d{9}$/.test(value)) return 'must be 9 digits';
  if (!ABA_PREFIX(Number(value.slice(0, 2)))) return 'is not a US routing number (its first two digits are not an assigned range)';
  return abaCheckDigit(value.slice(0, 8)) === value[8] ? null : 'is not a valid ABA routing number: the checksum does not match';
};

export const clabeNumber: Check = (value) => {
  const result = clabe.validate(value);
  return result.ok ? null : `is not a valid CLABE: ${result.message}`;
};

export const cbu: Check = (value) => {
  if (!/^\d{22}$/.test(value)) return 'must be 22 digits';
  const expected = cbuCheckDigits(value.slice(0, 7), value.slice(8, 21));
  return expected.bank === value[7] && expected.account === value[21] ? null : 'is not a valid CBU: a check digit does not match';
};

// A NUBAN's check digit covers the bank code too, so it is checked against the pair.
export function nubanProblem(bankCode: string, accountNumber: string): string | null {
  if (!/^\d{3}$/.test(bankCode) || !/^\d{10}$/.test(accountNumber)) return null; // shape is the schema's job
  return nubanCheckDigit(bankCode, accountNumber.slice(0, 9)) === accountNumber[9] ? null : 'is not a valid NUBAN for this bank code: the check digit does not match';
}

export const PIX_KEY_TYPES = ['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'EVP'] as const;
export type PixKeyType = (typeof PIX_KEY_TYPES)[number];

/** The PIX key's kind and its canonical DICT form, or null when it is no valid PIX key. */
export function pixKey(value: string): { type: PixKeyType; value: string } | null {
  const info = getPixKeyInfo(value);
  return info ? { type: info.type.toUpperCase() as PixKeyType, value: info.value } : null;
}

// Decision (documented in the schema): an all-lowercase or all-uppercase address carries no
// checksum and is accepted; a mixed-case one is a checksum claim and must match exactly.
export const evmAddress: Check = (value) => {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) return 'is not an EVM address (0x followed by 40 hexadecimal digits)';
  const hex = value.slice(2);
  const mixedCase = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  if (mixedCase && eip55Checksum(value) !== value) return 'does not match its EIP-55 checksum (a letter has the wrong case); check the address';
  return null;
};

export type BitcoinNetwork = 'mainnet' | 'testnet';

export function bitcoinAddress(networks: readonly BitcoinNetwork[]): Check {
  return (value) => {
    let network: string;
    try {
      network = getAddressInfo(value).network;
    } catch {
      return 'is not a valid Bitcoin address (base58check or bech32 checksum fails)';
    }
    return (networks as readonly string[]).includes(network) ? null : `is a Bitcoin ${network} address; this environment accepts ${networks.join(' or ')} addresses only`;
  };
}

/** bech32 addresses are case-insensitive and conventionally written in lower case. */
export const bitcoinCanonical = (address: string): string => (getAddressInfo(address).bech32 ? address.toLowerCase() : address);

// Stellar StrKey (SEP-23): base32 of version byte + 32-byte key + CRC16-XModem.
export const stellarAccount: Check = (value) =>
  stellarAccountKey(value) ? null : 'is not a valid Stellar account address (G followed by 55 base32 characters with a matching checksum)';
