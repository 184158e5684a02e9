// Money is a decimal string at the asset's precision on the wire and a bigint count of minor
// units inside. No binary float ever holds an amount. Rates are decimal strings applied with
// exact rational arithmetic and one explicit rounding rule per call.
import currencyCodes from 'currency-codes';

/** Precision of crypto assets (DECISIONS.md §5): USDC 6, BTC 8, ETH 18. */
export const CRYPTO_PRECISION: Record<string, number> = { USDC: 6, BTC: 8, ETH: 18 };

export type Rounding = 'DOWN' | 'UP' | 'HALF_EVEN';

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

export class MoneyError extends Error {}

// currency-codes finds a code by scanning its whole table, and every amount parsed or formatted
// asks for a precision (dozens per quote): remembered per asset after the first lookup.
const precisions = new Map<string, number>(Object.entries(CRYPTO_PRECISION));

/** Number of fraction digits of a currency (ISO 4217 minor units) or crypto asset. */
export function precisionOf(asset: string): number {
  const known = precisions.get(asset);
  if (known !== undefined) return known;
  const info = currencyCodes.code(asset);
  if (!info) throw new MoneyError(`Unknown currency or asset ${asset}`);
  precisions.set(asset, info.digits);
  return info.digits;
}

/**
 * Parses a decimal string into minor units. More fraction digits than the asset allows is an
 * error, never a silent rounding.
 */
export function toMinor(amount: string, asset: string): bigint {
  const m = DECIMAL.exec(amount);
  if (!m) throw new MoneyError(`"${amount}" is not a decimal amount`);
  const digits = precisionOf(asset);
  const fraction = m[3] ?? '';
  if (fraction.length > digits && /[1-9]/.test(fraction.slice(digits))) {
    throw new MoneyError(`${asset} amounts have at most ${digits} decimal places`);
  }
  const units = BigInt(m[2]! + fraction.slice(0, digits).padEnd(digits, '0'));
  return m[1] ? -units : units;
}

/**
 * Parses an amount a client sent. Stricter than toMinor: more fraction digits than the asset has
 * are refused even when they are zeros ("10.000" USD, "1500.0" JPY), so every money input of the
 * API (a quote's amount, a sandbox funding amount) follows the one documented rule.
 */
export function parseClientAmount(amount: string, asset: string): bigint {
  const digits = precisionOf(asset);
  const fraction = DECIMAL.exec(amount)?.[3] ?? '';
  if (fraction.length > digits) throw new MoneyError(digits ? `${asset} amounts have at most ${digits} decimal places` : `${asset} amounts are whole numbers`);
  return toMinor(amount, asset);
}

/** Formats minor units as a decimal string with exactly the asset's number of fraction digits. */
export function fromMinor(minor: bigint, asset: string): string {
  const digits = precisionOf(asset);
  const negative = minor < 0n;
  const s = (negative ? -minor : minor).toString().padStart(digits + 1, '0');
  const whole = s.slice(0, s.length - digits);
  const frac = s.slice(s.length - digits);
  return `${negative ? '-' : ''}${whole}${digits ? `.${frac}` : ''}`;
}

/** Normalizes a decimal string to the asset's precision ("10" USD → "10.00"). */
export function normalize(amount: string, asset: string): string {
  return fromMinor(toMinor(amount, asset), asset);
}

/** A decimal string as an exact fraction numerator/denominator. */
export function ratio(decimal: string): { num: bigint; den: bigint } {
  const m = DECIMAL.exec(decimal);
  if (!m) throw new MoneyError(`"${decimal}" is not a decimal number`);
  const fraction = m[3] ?? '';
  const num = BigInt(m[2]! + fraction) * (m[1] ? -1n : 1n);
  return { num, den: 10n ** BigInt(fraction.length) };
}

/** num/den rounded to an integer by the given rule. */
export function divide(num: bigint, den: bigint, rounding: Rounding): bigint {
  if (den === 0n) throw new MoneyError('division by zero');
  if (den < 0n) return divide(-num, -den, rounding);
  const q = num / den;
  const r = num % den;
  if (r === 0n) return q;
  const negative = num < 0n;
  switch (rounding) {
    case 'DOWN':
      return negative ? q - 1n : q; // toward minus infinity: never gives the customer more
    case 'UP':
      return negative ? q : q + 1n;
    case 'HALF_EVEN': {
      const twice = 2n * (r < 0n ? -r : r);
      if (twice > den || (twice === den && q % 2n !== 0n)) return negative ? q - 1n : q + 1n;
      return q;
    }
  }
}

/**
 * Converts an amount from one asset to another at a decimal rate (units of `to` per unit of
 * `from`), rounding to the target precision by the given rule.
 */
export function convert(minor: bigint, from: string, to: string, rate: string, rounding: Rounding): bigint {
  const { num, den } = ratio(rate);
  const scale = 10n ** BigInt(precisionOf(to));
  const unscale = 10n ** BigInt(precisionOf(from));
  return divide(minor * num * scale, den * unscale, rounding);
}

/** Inverse of convert: how much `from` is needed to obtain `minorTo` of `to` at the rate. */
export function convertInverse(minorTo: bigint, from: string, to: string, rate: string, rounding: Rounding): bigint {
  const { num, den } = ratio(rate);
  const scaleFrom = 10n ** BigInt(precisionOf(from));
  const scaleTo = 10n ** BigInt(precisionOf(to));
  return divide(minorTo * den * scaleFrom, num * scaleTo, rounding);
}

/** basisPoints/10,000 of an amount, rounded by the given rule. */
export function bps(minor: bigint, basisPoints: number, rounding: Rounding): bigint {
  if (!Number.isInteger(basisPoints)) throw new MoneyError('basis points must be a whole number');
  return divide(minor * BigInt(basisPoints), 10_000n, rounding);
}

/** An exact decimal string of num/den with the given number of fraction digits (for rates). */
export function decimalString(num: bigint, den: bigint, fractionDigits: number, rounding: Rounding = 'HALF_EVEN'): string {
  const scaled = divide(num * 10n ** BigInt(fractionDigits), den, rounding);
  const negative = scaled < 0n;
  const s = (negative ? -scaled : scaled).toString().padStart(fractionDigits + 1, '0');
  const whole = s.slice(0, s.length - fractionDigits);
  const frac = s.slice(s.length - fractionDigits).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}
