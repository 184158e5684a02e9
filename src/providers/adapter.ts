// The one interface every payment provider implements, simulated or real (DECISIONS.md §1, §6).
// The quote engine, the execution engine and the rail directory only ever talk to providers
// through it. Customer-visible names and references are kept apart from credentials and raw
// payloads, which never leave the adapter.

export const FIAT_METHODS = ['ACH', 'SEPA', 'SWIFT', 'WIRE', 'PIX', 'SPEI', 'LOCAL'] as const;
export type FiatMethod = (typeof FIAT_METHODS)[number];

export const AVAILABILITIES = ['ACTIVE', 'DEGRADED', 'DOWN'] as const;
export type Availability = (typeof AVAILABILITIES)[number];

export interface FiatRail {
  type: 'FIAT';
  country: string; // ISO 3166-1 alpha-2
  currency: string; // ISO 4217
  method: FiatMethod;
}

export interface CryptoRail {
  type: 'CRYPTO';
  blockchain: string; // ETHEREUM, POLYGON, BITCOIN, STELLAR, ...
  asset: string; // USDC, ETH, BTC, ...
}

export type Rail = FiatRail | CryptoRail;

/** The asset a rail carries: the currency of a fiat rail, the asset of a crypto rail. */
export const railAsset = (rail: Rail): string => (rail.type === 'FIAT' ? rail.currency : rail.asset);

/** A stable key for a rail, e.g. "FIAT:US:USD:ACH" or "CRYPTO:POLYGON:USDC". */
export const railKey = (rail: Rail): string =>
  rail.type === 'FIAT' ? `FIAT:${rail.country}:${rail.currency}:${rail.method}` : `CRYPTO:${rail.blockchain}:${rail.asset}`;

export type LegKind = 'COLLECTION' | 'CONVERSION' | 'PAYOUT';

/**
 * Fees a provider charges for one leg. Amounts are decimal strings in the leg's source asset.
 * percentBps is basis points of the leg's input amount; fxSpreadBps widens the mid rate against
 * the customer on conversions.
 */
export interface FeeSchedule {
  fixed: string;
  percentBps: number;
  fxSpreadBps: number;
}

/** One thing a provider can do: collect on a rail, pay out on a rail, or convert between assets. */
export type Capability =
  | { kind: 'COLLECTION'; rail: Rail; fees: FeeSchedule; etaSeconds: number }
  | { kind: 'PAYOUT'; rail: Rail; fees: FeeSchedule; etaSeconds: number }
  | { kind: 'CONVERSION'; from: string; to: string; fees: FeeSchedule; etaSeconds: number };

export interface LegQuoteRequest {
  kind: LegKind;
  /** Asset entering the leg and asset leaving it (equal for COLLECTION and PAYOUT). */
  fromAsset: string;
  toAsset: string;
  rail?: Rail;
  /** Decimal string in fromAsset. */
  amountIn: string;
}

export interface LegQuote {
  /** Mid-market rate fromAsset → toAsset before spread, as a decimal string ("1" for same asset). */
  midRate: string;
  /** Rate applied after the provider's spread. */
  rate: string;
  fees: FeeSchedule;
  etaSeconds: number;
}

export interface LegExecutionRequest {
  legId: string;
  transferId: string;
  kind: LegKind;
  fromAsset: string;
  toAsset: string;
  amount: string;
  rail?: Rail;
  /** Destination instructions for a PAYOUT leg (the confirmed destination snapshot). */
  destination?: Record<string, unknown>;
  /**
   * Sandbox only: the outcome the magic amount asked for. Simulators obey it; real providers
   * ignore it. SUCCEED completes the leg, FAIL fails it, RETURN completes then returns it.
   */
  sandboxOutcome?: 'SUCCEED' | 'FAIL' | 'RETURN';
  /**
   * The rate the quote locked for a CONVERSION leg (units of toAsset per fromAsset). When given,
   * a provider that honours quoted rates delivers at it; simulators use it for amountOut.
   */
  rate?: string;
}

/** Leg statuses (DECISIONS.md §5). */
export const LEG_STATUSES = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'RETURNED', 'CANCELED'] as const;
export type LegStatus = (typeof LEG_STATUSES)[number];

/**
 * progressStage values, per leg kind, in the order a leg normally passes through them; the last
 * one is reached on COMPLETED. FAILED and CANCELED legs keep the stage they had reached. A payout
 * the beneficiary's bank sends back before it settles moves to RETURNED_BY_BENEFICIARY_BANK.
 */
export const PROGRESS_STAGES = {
  COLLECTION: ['AWAITING_FUNDS', 'FUNDS_DETECTED', 'FUNDS_SETTLED'],
  CONVERSION: ['ORDER_PLACED', 'ORDER_FILLED', 'CONVERTED_FUNDS_SETTLED'],
  PAYOUT: ['PAYOUT_INITIATED', 'SENT_TO_RAIL', 'DELIVERED_TO_BENEFICIARY'],
} as const satisfies Record<LegKind, readonly string[]>;
export const RETURNED_STAGE = 'RETURNED_BY_BENEFICIARY_BANK';
export type ProgressStage = (typeof PROGRESS_STAGES)[LegKind][number] | typeof RETURNED_STAGE;

export interface LegStatusReport {
  status: LegStatus;
  progressStage: string;
  /** Amount actually delivered by the leg, when known (decimal string in toAsset). */
  amountOut?: string;
  /** Reason for FAILED or RETURNED, customer-safe. */
  reason?: string;
}

export interface LegHandOff {
  providerReference: string;
  report: LegStatusReport;
}

export interface ProviderAdapter {
  /** Internal id used in configuration, e.g. "sim-us-ach". */
  readonly id: string;
  /** Customer-visible name, e.g. "Sandbox ACH (US)". */
  readonly displayName: string;
  capabilities(): Capability[];
  availability(): Availability;
  quoteLeg(request: LegQuoteRequest): Promise<LegQuote>;
  /**
   * Starts a leg (idempotent per leg id); returns the customer-safe reference the provider
   * assigned and the leg's state as the provider answered the hand-off, as payment APIs answer
   * a create with the created object, so the engine need not ask for it again at once.
   */
  executeLeg(request: LegExecutionRequest): Promise<LegHandOff>;
  /**
   * Optional: several legs handed over in one call, for a provider with a batch API (the
   * simulators store them in one insert). Each is handled as executeLeg would handle it alone;
   * answers, in order, each hand-off or the error that refused that leg.
   */
  executeLegs?(requests: LegExecutionRequest[]): Promise<Array<LegHandOff | Error>>;
  legStatus(providerReference: string): Promise<LegStatusReport>;
}

/**
 * Sandbox simulators also let the execution engine (and tests) move a leg one step at once.
 * Their leg state is kept in the database, so a restart resumes where it stopped.
 */
export interface SimulatedProvider extends ProviderAdapter {
  readonly simulated: true;
  /** Moves the leg one stage forward (or to its scripted outcome) and reports the new state. */
  advance(providerReference: string): Promise<LegStatusReport>;
}

export const isSimulated = (p: ProviderAdapter): p is SimulatedProvider => (p as Partial<SimulatedProvider>).simulated === true;

export const PROVIDER_ERROR_CODES = ['provider_unavailable', 'unsupported_leg', 'unknown_reference'] as const;
export type ProviderErrorCode = (typeof PROVIDER_ERROR_CODES)[number];

/**
 * Why a provider refused a call. The codes are stable so the engines can choose another
 * provider (provider_unavailable, unsupported_leg) or treat a lost reference as a bug. The
 * message is safe to log; it never carries credentials or raw provider payloads.
 */
export class ProviderError extends Error {
  readonly code: ProviderErrorCode;
  readonly providerId: string;
  constructor(code: ProviderErrorCode, providerId: string, message: string) {
    super(message);
    this.name = 'ProviderError';
    this.code = code;
    this.providerId = providerId;
  }
}
