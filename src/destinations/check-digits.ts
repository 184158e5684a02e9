// The check digits and checksums of the identifiers Corridor both accepts and hands out, written
// once: destinations validate what customers type in, funding generates the coordinates it gives
// to payers, and the two must never disagree about what a valid number is. Pure functions, no
// state, so any domain may import them. Only rules that no installed library covers live here:
// IBAN and BIC are ibantools', CLABE is clabe-validator's, Bitcoin is bech32's and
// bitcoin-address-validation's, and keccak-256 comes from @noble/hashes.
import { keccak_256 } from '@noble/hashes/sha3.js';

/**
 * (10 − Σ digitᵢ·weightᵢ mod 10) mod 10: the weighted modulus-10 check digit that ABA routing
 * numbers, NUBANs and both CBU blocks use, each with its own weights.
 */
function weightedMod10(digits: string, weights: readonly number[]): string {
  if (digits.length !== weights.length || !/^\d*$/.test(digits)) throw new RangeError(`expected ${weights.length} digits, got "${digits}"`);
  const sum = weights.reduce((total, weight, i) => total + weight * Number(digits[i]), 0);
  return String((10 - (sum % 10)) % 10);
}

/** The ninth digit of a US routing number, from its first eight (ABA 3-7-1 weights). */
export const abaCheckDigit = (first8: string): string => weightedMod10(first8, [3, 7, 1, 3, 7, 1, 3, 7]);

/** The tenth digit of a Nigerian NUBAN, from the 3-digit bank code and the 9-digit serial (CBN standard). */
export const nubanCheckDigit = (bankCode: string, serial: string): string => weightedMod10(bankCode + serial, [3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3]);

/**
 * An Argentine CBU's two check digits (BCRA Communication A 2044): one closes the 7-digit bank and
 * branch block, the other the 13-digit account block. A CBU is bank + bank check + account + account check.
 */
export function cbuCheckDigits(bankBlock: string, accountBlock: string): { bank: string; account: string } {
  return {
    bank: weightedMod10(bankBlock, [7, 1, 3, 9, 7, 1, 3]),
    account: weightedMod10(accountBlock, [3, 9, 7, 1, 3, 9, 7, 1, 3, 9, 7, 1, 3]),
  };
}

/**
 * EIP-55: an EVM address (0x + 40 hex digits, any case) in its checksummed letter case. A hex
 * letter is upper case where the matching nibble of keccak-256 of the lower-case hex is 8 or more.
 */
export function eip55Checksum(address: string): string {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new RangeError(`not an EVM address: "${address}"`);
  const lower = address.slice(2).toLowerCase();
  const hash = keccak_256(new TextEncoder().encode(lower));
  let out = '0x';
  for (let i = 0; i < 40; i++) {
    const nibble = (hash[i >> 1]! >> (i % 2 === 0 ? 4 : 0)) & 0x0f;
    out += nibble >= 8 ? lower[i]!.toUpperCase() : lower[i];
  }
  return out;
}

// CRC-16 with the CCITT polynomial 0x1021, MSB first, no reflection, no final XOR. The named
// variants differ only in the starting register.
function crc16(bytes: Uint8Array, initial: number): number {
  let crc = initial;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** CRC-16/XMODEM (initial 0x0000): the checksum of Stellar StrKeys. */
export const crc16Xmodem = (bytes: Uint8Array): number => crc16(bytes, 0x0000);

/** CRC-16/CCITT-FALSE (initial 0xFFFF): the checksum that closes an EMV/PIX BR Code. */
export const crc16CcittFalse = (bytes: Uint8Array): number => crc16(bytes, 0xffff);

export const BASE32_RFC4648 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** Base32 without padding, in `alphabet` (RFC 4648 by default); a last partial group is zero-filled. */
export function base32Encode(bytes: Uint8Array, alphabet: string = BASE32_RFC4648): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xfff; // at most 4 pending bits + 8 new ones matter
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The bytes of unpadded base32 text, or null when a character is outside `alphabet` or the text
 * is not a canonical encoding (a dangling character, or non-zero fill bits), so that exactly one
 * spelling decodes to each byte string.
 */
export function base32Decode(text: string, alphabet: string = BASE32_RFC4648): Uint8Array | null {
  const bytes = new Uint8Array(Math.floor((text.length * 5) / 8));
  let bits = 0;
  let value = 0;
  let n = 0;
  for (const ch of text) {
    const v = alphabet.indexOf(ch);
    if (v < 0) return null;
    value = ((value << 5) | v) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      bytes[n++] = (value >>> bits) & 0xff;
    }
  }
  return bits < 5 && (value & ((1 << bits) - 1)) === 0 ? bytes : null;
}

const STELLAR_ACCOUNT_VERSION = 6 << 3; // StrKey version byte of an ed25519 public key ("G…")

/** Stellar StrKey (SEP-23) of an ed25519 public key: base32 of version + key + CRC16-XModem (little-endian). */
export function stellarAccountId(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new RangeError('an ed25519 public key has 32 bytes');
  const payload = new Uint8Array(35);
  payload[0] = STELLAR_ACCOUNT_VERSION;
  payload.set(publicKey, 1);
  const crc = crc16Xmodem(payload.subarray(0, 33));
  payload[33] = crc & 0xff;
  payload[34] = crc >> 8;
  return base32Encode(payload);
}

/** The ed25519 public key a Stellar account id ("G…", 56 characters) encodes, or null when it is no valid one. */
export function stellarAccountKey(accountId: string): Uint8Array | null {
  if (accountId.length !== 56) return null;
  const bytes = base32Decode(accountId);
  if (!bytes || bytes.length !== 35 || bytes[0] !== STELLAR_ACCOUNT_VERSION) return null;
  const crc = crc16Xmodem(bytes.subarray(0, 33));
  return bytes[33] === (crc & 0xff) && bytes[34] === crc >> 8 ? bytes.slice(1, 33) : null;
}
