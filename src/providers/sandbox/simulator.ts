// One configurable simulated provider: whatever a config entry says it can do, it does against
// the fixed sandbox market, and it carries legs through their stages in its own table so that a
// restart resumes. The pace is the caller's: a leg moves only when advance() is called.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { convert, normalize, toMinor, fromMinor } from '../../platform/money.ts';
import { PROGRESS_STAGES, ProviderError, RETURNED_STAGE, railAsset, railKey } from '../adapter.ts';
import type {
  Availability,
  Capability,
  LegExecutionRequest,
  LegHandOff,
  LegKind,
  LegQuote,
  LegQuoteRequest,
  LegStatus,
  LegStatusReport,
  SimulatedProvider,
} from '../adapter.ts';
import type { ProviderEntry } from '../configuration.ts';
import { rateString, sandboxMidRate, withSpread } from './rates.ts';
import { SandboxLegRepository } from './repository.ts';
import type { NewSandboxLeg, SandboxLegRow, SandboxOutcome } from './repository.ts';

interface Step {
  status: LegStatus;
  stage: string;
  reason?: string;
}

/** Where a scripted failure is reported: payouts fail on the rail, conversions when the order is placed, collections while waiting. */
const FAILURE_STAGE: Record<LegKind, string> = {
  COLLECTION: PROGRESS_STAGES.COLLECTION[0],
  CONVERSION: PROGRESS_STAGES.CONVERSION[0],
  PAYOUT: PROGRESS_STAGES.PAYOUT[1],
};

const FAILURE_REASON: Record<LegKind, string> = {
  COLLECTION: 'The funds could not be collected',
  CONVERSION: 'The conversion order could not be filled',
  PAYOUT: 'The payment rail rejected the payout',
};

const RETURN_REASON = "The beneficiary's bank returned the payment";

/**
 * The whole life of a simulated leg per kind and scripted outcome: step 0 is where executeLeg
 * puts it, each advance() moves to the next step, and the last step is terminal. RETURN only
 * changes payouts (a conversion or collection cannot be returned by a beneficiary's bank).
 */
function script(kind: LegKind, outcome: SandboxOutcome): Step[] {
  const stages: readonly string[] = PROGRESS_STAGES[kind];
  const succeed: Step[] = stages.map((stage, i) => ({ status: i === stages.length - 1 ? 'COMPLETED' : 'PROCESSING', stage }));
  if (outcome === 'FAIL') return [succeed[0]!, { status: 'FAILED', stage: FAILURE_STAGE[kind], reason: FAILURE_REASON[kind] }];
  if (outcome === 'RETURN' && kind === 'PAYOUT') {
    return [...succeed.slice(0, -1), { status: 'RETURNED', stage: RETURNED_STAGE, reason: RETURN_REASON }];
  }
  return succeed;
}

export const SCRIPTS: Record<LegKind, Record<SandboxOutcome, Step[]>> = Object.fromEntries(
  (['COLLECTION', 'CONVERSION', 'PAYOUT'] as const).map((kind) => [
    kind,
    { SUCCEED: script(kind, 'SUCCEED'), FAIL: script(kind, 'FAIL'), RETURN: script(kind, 'RETURN') },
  ]),
) as Record<LegKind, Record<SandboxOutcome, Step[]>>;

const TERMINAL: ReadonlySet<LegStatus> = new Set(['COMPLETED', 'FAILED', 'RETURNED', 'CANCELED']);

export interface SimulatorOptions {
  entry: ProviderEntry;
  credentials: Record<string, string>;
  db: Kysely<any>;
  /** The provider's current availability (configured value or an operator's override). */
  availability: () => Availability;
}

export class SimulatedSandboxProvider implements SimulatedProvider {
  readonly simulated = true as const;
  readonly id: string;
  readonly displayName: string;
  readonly #capabilities: Capability[];
  readonly #referencePrefix: string;
  readonly #availability: () => Availability;
  readonly #legs: SandboxLegRepository;
  // Held only so a real adapter's shape is honoured; a simulator authenticates to nothing.
  readonly #credentials: Record<string, string>;

  constructor(options: SimulatorOptions) {
    this.id = options.entry.id;
    this.displayName = options.entry.displayName;
    this.#capabilities = options.entry.capabilities;
    this.#referencePrefix = options.entry.settings?.referencePrefix ?? options.entry.id.replace(/^sim-/, '').replace(/[^a-z0-9]/gi, '').toUpperCase().slice(0, 12);
    this.#availability = options.availability;
    this.#legs = new SandboxLegRepository(options.db);
    this.#credentials = options.credentials;
  }

  capabilities(): Capability[] {
    return this.#capabilities;
  }

  availability(): Availability {
    return this.#availability();
  }

  /** True when this provider was given credentials (kept inside the adapter). */
  hasCredentials(): boolean {
    return Object.keys(this.#credentials).length > 0;
  }

  async quoteLeg(request: LegQuoteRequest): Promise<LegQuote> {
    const capability = this.#capabilityFor(request);
    if (request.kind !== 'CONVERSION') return { midRate: '1', rate: '1', fees: capability.fees, etaSeconds: capability.etaSeconds };
    const mid = sandboxMidRate(request.fromAsset, request.toAsset);
    return {
      midRate: rateString(mid, 'HALF_EVEN'),
      // The spread always works against the customer, so the applied rate rounds down.
      rate: rateString(withSpread(mid, capability.fees.fxSpreadBps), 'DOWN'),
      fees: capability.fees,
      etaSeconds: capability.etaSeconds,
    };
  }

  async executeLeg(request: LegExecutionRequest): Promise<LegHandOff> {
    const [handOff] = await this.executeLegs([request]);
    if (handOff instanceof Error) throw handOff;
    return handOff!;
  }

  async executeLegs(requests: LegExecutionRequest[]): Promise<Array<LegHandOff | Error>> {
    const refused = new ProviderError('provider_unavailable', this.id, `${this.displayName} is not accepting new payments`);
    if (this.availability() === 'DOWN') return requests.map(() => refused);
    const answers: Array<LegHandOff | Error | null> = [];
    const rows: NewSandboxLeg[] = [];
    for (const request of requests) {
      try {
        rows.push(this.#newLeg(request));
        answers.push(null);
      } catch (err) {
        answers.push(err as Error);
      }
    }
    const stored = new Map((await this.#legs.insertManyOnce(rows)).map((row) => [row.leg_id, row]));
    return requests.map((request, i) => {
      const row = stored.get(request.legId);
      return answers[i] ?? (row ? { providerReference: row.provider_reference, report: report(row) } : new Error(`${this.id}: leg ${request.legId} was not stored`));
    });
  }

  /** The simulated leg a hand-off starts, at the first step of its script. */
  #newLeg(request: LegExecutionRequest): NewSandboxLeg {
    this.#capabilityFor(request);
    const outcome = request.sandboxOutcome ?? 'SUCCEED';
    const first = SCRIPTS[request.kind][outcome][0]!;
    const reference = `SIM-${this.#referencePrefix}-${randomBytes(8).toString('hex').toUpperCase()}`;
    return {
      provider_reference: reference,
      provider_id: this.id,
      leg_id: request.legId,
      transfer_id: request.transferId,
      kind: request.kind,
      from_asset: request.fromAsset,
      to_asset: request.toAsset,
      amount: normalize(request.amount, request.fromAsset),
      rate: request.rate ?? null,
      sandbox_outcome: outcome,
      stage_index: 0,
      progress_stage: first.stage,
      status: first.status,
      raw_payload: rawPayload(reference, first),
    };
  }

  async legStatus(providerReference: string): Promise<LegStatusReport> {
    const row = await this.#legs.find(this.id, providerReference);
    if (!row) throw this.#unknown(providerReference);
    return report(row);
  }

  async advance(providerReference: string): Promise<LegStatusReport> {
    const row = await this.#legs.update(this.id, providerReference, (leg) => {
      if (TERMINAL.has(leg.status)) return null;
      const steps = SCRIPTS[leg.kind][leg.sandbox_outcome];
      const index = Math.min(leg.stage_index + 1, steps.length - 1);
      const step = steps[index]!;
      return {
        stage_index: index,
        progress_stage: step.stage,
        status: step.status,
        reason: step.reason ?? null,
        amount_out: step.status === 'COMPLETED' ? this.#amountOut(leg) : null,
        raw_payload: rawPayload(providerReference, step),
      };
    });
    if (!row) throw this.#unknown(providerReference);
    return report(row);
  }

  #capabilityFor(request: { kind: LegKind; fromAsset: string; toAsset: string; rail?: LegQuoteRequest['rail'] }): Capability {
    const found = this.#capabilities.find((c) => {
      if (c.kind !== request.kind) return false;
      if (c.kind === 'CONVERSION') return c.from === request.fromAsset && c.to === request.toAsset;
      if (request.rail) return railKey(c.rail) === railKey(request.rail);
      return railAsset(c.rail) === request.fromAsset;
    });
    if (!found) {
      const what = request.kind === 'CONVERSION' ? `${request.fromAsset}→${request.toAsset}` : request.rail ? railKey(request.rail) : request.fromAsset;
      throw new ProviderError('unsupported_leg', this.id, `${this.displayName} does not offer ${request.kind} on ${what}`);
    }
    return found;
  }

  /** What a completed leg delivers: the same amount for collections and payouts, converted for conversions. */
  #amountOut(leg: SandboxLegRow): string {
    if (leg.kind !== 'CONVERSION') return leg.amount;
    let rate = leg.rate;
    if (!rate) {
      const capability = this.#capabilityFor({ kind: 'CONVERSION', fromAsset: leg.from_asset, toAsset: leg.to_asset });
      rate = rateString(withSpread(sandboxMidRate(leg.from_asset, leg.to_asset), capability.fees.fxSpreadBps), 'DOWN');
    }
    return fromMinor(convert(toMinor(leg.amount, leg.from_asset), leg.from_asset, leg.to_asset, rate, 'DOWN'), leg.to_asset);
  }

  #unknown(reference: string): ProviderError {
    return new ProviderError('unknown_reference', this.id, `${this.displayName} has no leg ${reference}`);
  }
}

function report(row: SandboxLegRow): LegStatusReport {
  const out: LegStatusReport = { status: row.status, progressStage: row.progress_stage };
  if (row.amount_out !== null) out.amountOut = normalize(row.amount_out, row.to_asset);
  if (row.reason !== null) out.reason = row.reason;
  return out;
}

/** The simulated provider's own message, as a real one would send it (kept internal). */
function rawPayload(reference: string, step: Step): Record<string, unknown> {
  return { object: 'sim_payment', id: reference, state: step.stage.toLowerCase(), status: step.status.toLowerCase(), at: new Date().toISOString() };
}
