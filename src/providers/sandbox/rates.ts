// The sandbox market: fixed mid rates (notes/SANDBOX_NETWORK.md), so quotes are reproducible.
// Cross rates are exact fractions of two table entries; only the final decimal string rounds.
import { decimalString, ratio } from '../../platform/money.ts';
import type { Rounding } from '../../platform/money.ts';

/** Units of each asset per 1 USD. */
export const SANDBOX_MID_RATES_PER_USD: Readonly<Record<string, string>> = {
  USD: '1',
  EUR: '0.92',
  GBP: '0.79',
  BRL: '5.40',
  MXN: '17.10',
  NGN: '1550',
  KES: '129.5',
  PHP: '56.2',
  SGD: '1.34',
  AED: '3.6725',
  JPY: '151.2',
  CHF: '0.88',
  ARS: '870',
  USDC: '1',
  ETH: '0.00029',
  BTC: '0.0000105',
};

/** Rates are published with this many significant digits. */
export const RATE_SIGNIFICANT_DIGITS = 12;

export interface Fraction {
  num: bigint;
  den: bigint;
}

export const hasSandboxRate = (asset: string): boolean => asset in SANDBOX_MID_RATES_PER_USD;

/** The exact mid rate from → to (units of `to` per unit of `from`). */
export function sandboxMidRate(from: string, to: string): Fraction {
  const perUsdFrom = SANDBOX_MID_RATES_PER_USD[from];
  const perUsdTo = SANDBOX_MID_RATES_PER_USD[to];
  if (perUsdFrom === undefined || perUsdTo === undefined) throw new Error(`The sandbox market has no rate for ${from}/${to}`);
  const f = ratio(perUsdFrom);
  const t = ratio(perUsdTo);
  // (t.num/t.den) / (f.num/f.den)
  return { num: t.num * f.den, den: t.den * f.num };
}

/** The rate after a spread of `spreadBps` against the customer. */
export function withSpread(rate: Fraction, spreadBps: number): Fraction {
  return { num: rate.num * BigInt(10_000 - spreadBps), den: rate.den * 10_000n };
}

/**
 * A positive fraction as a decimal string with RATE_SIGNIFICANT_DIGITS significant digits, so
 * small rates (USD→BTC) keep their precision and large ones (BTC→ARS) gain no false digits.
 */
export function rateString(rate: Fraction, rounding: Rounding): string {
  if (rate.num <= 0n || rate.den <= 0n) throw new Error('rates are positive');
  const whole = rate.num / rate.den;
  let fractionDigits: number;
  if (whole > 0n) {
    fractionDigits = Math.max(0, RATE_SIGNIFICANT_DIGITS - whole.toString().length);
  } else {
    // Leading zeros after the point: the smallest k with num·10^k ≥ den, minus one.
    let k = 0;
    while (rate.num * 10n ** BigInt(k) < rate.den) k++;
    fractionDigits = RATE_SIGNIFICANT_DIGITS + k - 1;
  }
  return decimalString(rate.num, rate.den, fractionDigits, rounding);
}
