// Pricing one path, exactly, in bigint minor units (docs/QUOTES.md states the same rules).
//
// Per leg: fee = fixed + percentBps of the leg's input, in the leg's input asset, rounded UP.
// What the leg passes on is its input minus the fee; a conversion turns that into the next
// asset at the provider's rate (mid × (1 − fxSpreadBps/10,000)), rounded DOWN. So the customer
// never receives more than the arithmetic allows and never pays less in fees than the schedule.
//
// fixedSide TO runs the same legs backwards from the exact requested output: each conversion
// asks for the smallest input that delivers the required output (rounded UP), each fee is
// solved for the smallest input that leaves the required amount after the fee.
import { bps, convert, convertInverse, decimalString, divide, fromMinor, precisionOf, ratio, toMinor } from '../platform/money.ts';
import type { FeeSchedule, LegKind, Rail } from '../providers/adapter.ts';

export interface LegPricingInput {
  kind: LegKind;
  providerId: string;
  provider: string;
  fromAsset: string;
  toAsset: string;
  rail?: Rail;
  fees: FeeSchedule;
  /** Units of toAsset per unit of fromAsset before the spread ("1" for COLLECTION and PAYOUT). */
  midRate: string;
  /** The rate the provider applies, after its spread. */
  rate: string;
  etaSeconds: number;
}

export interface PricedLeg extends Omit<LegPricingInput, 'fees'> {
  position: number;
  amountIn: bigint;
  /** The leg's fee, in fromAsset. */
  fee: bigint;
  amountOut: bigint;
}

export interface PricedFee {
  type: 'COLLECTION_FEE' | 'CONVERSION_FEE' | 'PAYOUT_FEE';
  amount: string;
  currency: string;
  legPosition: number;
}

export interface PricedPath {
  fromAsset: string;
  toAsset: string;
  fromAmount: bigint;
  toAmount: bigint;
  /** toAmount ÷ fromAmount (see optionRate). */
  rate: string;
  fees: PricedFee[];
  /** Every fee expressed in fromAsset at the mid rate, each rounded UP, summed. */
  totalFee: bigint;
  etaSeconds: number;
  legs: PricedLeg[];
}

export type Unpriceable = { unpriceable: 'amount_below_fees' };

const feeType = (kind: LegKind): PricedFee['type'] => `${kind}_FEE`;

/** The fee a leg charges on an input: fixed + percentBps of the input, rounded UP. */
export function legFee(amountIn: bigint, fees: FeeSchedule, asset: string): bigint {
  return toMinor(fees.fixed, asset) + bps(amountIn, fees.percentBps, 'UP');
}

/** fixedSide FROM: prices the legs forward from the exact source amount. */
export function priceForward(legs: LegPricingInput[], fromAmount: bigint): PricedPath | Unpriceable {
  const priced: PricedLeg[] = [];
  let amount = fromAmount;
  for (const [i, leg] of legs.entries()) {
    const fee = legFee(amount, leg.fees, leg.fromAsset);
    const net = amount - fee;
    if (net <= 0n) return { unpriceable: 'amount_below_fees' };
    const out = leg.kind === 'CONVERSION' ? convert(net, leg.fromAsset, leg.toAsset, leg.rate, 'DOWN') : net;
    if (out <= 0n) return { unpriceable: 'amount_below_fees' };
    priced.push(pricedLeg(i, leg, amount, fee, out));
    amount = out;
  }
  return summarize(priced);
}

/** fixedSide TO: prices the legs backwards so the last one delivers exactly toAmount. */
export function priceBackward(legs: LegPricingInput[], toAmount: bigint): PricedPath | Unpriceable {
  const priced: PricedLeg[] = [];
  let required = toAmount;
  for (let i = legs.length - 1; i >= 0; i--) {
    const leg = legs[i]!;
    const net = leg.kind === 'CONVERSION' ? convertInverse(required, leg.fromAsset, leg.toAsset, leg.rate, 'UP') : required;
    const amountIn = smallestInputLeaving(net, leg.fees, leg.fromAsset);
    if (amountIn === null) return { unpriceable: 'amount_below_fees' };
    priced.unshift(pricedLeg(i, leg, amountIn, amountIn - net, required));
    required = amountIn;
  }
  return summarize(priced);
}

/**
 * The smallest input I with I − fee(I) ≥ net. fee(I) rises by at most one minor unit per unit
 * of I (percentBps < 10,000), so at the smallest such I the equality is exact: the fee is I − net.
 */
export function smallestInputLeaving(net: bigint, fees: FeeSchedule, asset: string): bigint | null {
  if (fees.percentBps >= 10_000) return null;
  const fixed = toMinor(fees.fixed, asset);
  const leaves = (input: bigint) => input - legFee(input, fees, asset);
  let input = divide((net + fixed) * 10_000n, BigInt(10_000 - fees.percentBps), 'UP');
  while (leaves(input) < net) input++;
  while (input > 0n && leaves(input - 1n) >= net) input--;
  if (leaves(input) !== net) throw new Error('fee solver: the fee schedule is not monotonic');
  return input;
}

function pricedLeg(index: number, leg: LegPricingInput, amountIn: bigint, fee: bigint, amountOut: bigint): PricedLeg {
  const { fees: _fees, ...rest } = leg;
  const converts = leg.kind === 'CONVERSION';
  return { ...rest, position: index + 1, amountIn, fee, amountOut, rate: converts ? leg.rate : '1', midRate: converts ? leg.midRate : '1' };
}

function summarize(legs: PricedLeg[]): PricedPath {
  const first = legs[0]!;
  const last = legs[legs.length - 1]!;
  const source = first.fromAsset;
  const fees: PricedFee[] = [];
  let totalFee = 0n;
  // Mid rate from the source asset to the current leg's input asset, as an exact fraction.
  let midNum = 1n;
  let midDen = 1n;
  for (const leg of legs) {
    if (leg.fee > 0n) {
      fees.push({ type: feeType(leg.kind), amount: fromMinor(leg.fee, leg.fromAsset), currency: leg.fromAsset, legPosition: leg.position });
      // fee (in leg.fromAsset) ÷ mid, back in source minor units, rounded UP.
      const scaleSource = 10n ** BigInt(precisionOf(source));
      const scaleLeg = 10n ** BigInt(precisionOf(leg.fromAsset));
      totalFee += divide(leg.fee * midDen * scaleSource, midNum * scaleLeg, 'UP');
    }
    if (leg.kind === 'CONVERSION') {
      const mid = ratio(leg.midRate);
      midNum *= mid.num;
      midDen *= mid.den;
    }
  }
  return {
    fromAsset: source,
    toAsset: last.toAsset,
    fromAmount: first.amountIn,
    toAmount: last.amountOut,
    rate: optionRate(first.amountIn, source, last.amountOut, last.toAsset),
    fees,
    totalFee,
    etaSeconds: legs.reduce((sum, l) => sum + l.etaSeconds, 0),
    legs,
  };
}

/** Significant digits of an option's rate. */
export const RATE_SIGNIFICANT_DIGITS = 12;

/**
 * toAmount ÷ fromAmount in units (not minor units): exact when the quotient terminates within
 * RATE_SIGNIFICANT_DIGITS significant digits, else cut DOWN to that many.
 */
export function optionRate(fromAmount: bigint, fromAsset: string, toAmount: bigint, toAsset: string): string {
  const num = toAmount * 10n ** BigInt(precisionOf(fromAsset));
  const den = fromAmount * 10n ** BigInt(precisionOf(toAsset));
  return significant(num, den, RATE_SIGNIFICANT_DIGITS);
}

function significant(num: bigint, den: bigint, digits: number): string {
  if (num <= 0n || den <= 0n) throw new Error('rates are positive');
  const whole = num / den;
  let fractionDigits: number;
  if (whole > 0n) {
    fractionDigits = Math.max(0, digits - whole.toString().length);
  } else {
    let k = 0;
    while (num * 10n ** BigInt(k) < den) k++;
    fractionDigits = digits + k - 1;
  }
  return decimalString(num, den, fractionDigits, 'DOWN');
}
