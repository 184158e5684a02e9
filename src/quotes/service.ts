// Quotes: search the provider network for execution paths between two rails, price each one
// exactly, keep the best few as options that expire, and hand one to the transfer engine.
import { sql } from 'kysely';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import { isGuardRefusal, unless } from '../platform/db/guard.ts';
import { RecentMemory } from '../platform/recent.ts';
import { ApiError, notFound, unprocessable, validationError } from '../platform/http/errors.ts';
import { MoneyError, fromMinor, parseClientAmount, toMinor } from '../platform/money.ts';
import { iso } from '../platform/time.ts';
import { ProviderError, railAsset, railKey } from '../providers/adapter.ts';
import type { FiatMethod, LegKind, LegQuote, ProviderAdapter, Rail } from '../providers/adapter.ts';
import { searchPaths } from './paths.ts';
import type { Gap, LegCandidate, Path } from './paths.ts';
import { priceBackward, priceForward } from './pricing.ts';
import type { LegPricingInput, PricedFee, PricedPath } from './pricing.ts';
import { QuoteRepository } from './repository.ts';
import type { DestinationType, OptionStatus, OptionWithQuoteRow, QuoteOptionRow, QuoteRow } from './repository.ts';
import type { Advisory, QuoteRequest } from './schemas.ts';
import { isUuid, newId } from '../platform/ids.ts';
import { allInOrder } from '../platform/batch.ts';

/** Options returned per quote. */
export const MAX_OPTIONS = 5;

export type FixedSide = 'FROM' | 'TO';

export interface QuoteOptionView {
  id: string;
  status: OptionStatus;
  fromAsset: string;
  toAsset: string;
  fromAmount: string;
  toAmount: string;
  rate: string;
  fees: PricedFee[];
  totalFee: string;
  feeCurrency: string;
  eta: { seconds: number; estimatedArrivalAt: string };
  expiresAt: string;
  legs: Array<{ position: number; kind: LegKind; provider: string; fromAsset: string; toAsset: string }>;
}

export interface QuoteView {
  id: string;
  entityId: string;
  from: Rail;
  to: Rail;
  amount: string;
  fixedSide: FixedSide;
  activeOnly: boolean;
  destination: QuoteDestination | null;
  options: QuoteOptionView[];
  advisories: Advisory[];
  createdAt: string;
}

export interface QuoteDestination {
  type: DestinationType;
  id: string;
  version: number;
}

/** A leg as stored with an option and handed to the transfer engine. Amounts are decimal strings. */
export interface StoredLeg {
  position: number;
  kind: LegKind;
  providerId: string;
  provider: string;
  fromAsset: string;
  toAsset: string;
  amountIn: string;
  amountOut: string;
  /** Units of toAsset per fromAsset the provider applies ("1" for COLLECTION and PAYOUT). */
  rate: string;
  rail?: Rail;
  /** The leg's fee in fromAsset; amountIn − fee is what the leg moves on (or converts). */
  fee: string;
  midRate: string;
  etaSeconds: number;
}

/** Everything the transfer engine needs of one option (the contract between the two engines). */
export interface QuoteOptionForTransfer {
  id: string;
  quoteId: string;
  organizationId: string;
  entityId: string;
  /**
   * OPEN or EXPIRED (also when still OPEN in storage but past expiresAt by the database clock);
   * USED only on options taken before transfers kept that fact themselves (OptionUsage).
   */
  status: 'OPEN' | 'USED' | 'EXPIRED';
  expiresAt: Date;
  from: Rail;
  to: Rail;
  fromAsset: string;
  toAsset: string;
  fromAmount: string;
  toAmount: string;
  rate: string;
  fees: Array<{ type: string; amount: string; currency: string; legPosition?: number }>;
  totalFee: string;
  feeCurrency: string;
  etaSeconds: number;
  /** The quote request's amount, whose fraction selects sandbox outcomes. */
  requestAmount: string;
  fixedSide: FixedSide;
  destination: QuoteDestination | null;
  legs: StoredLeg[];
}

/** What the quote engine needs of the rest of the service; the real services satisfy these. */
export interface ProviderDirectory {
  all(): ProviderAdapter[];
}
export interface RailDirectory {
  hasFiatRail(rail: { country: string; currency: string; method: string }): boolean;
  hasCryptoRail(rail: { blockchain: string; asset: string }): boolean;
}
type Refs<K extends string> = Record<K, RawBuilder<unknown>>;
type FiatAccountFacts = { id: string; entityId: string; version: number; rail: { country: string; currency: string; method: string } };
type CryptoWalletFacts = { id: string; entityId: string; version: number; blockchain: string; asset: string };
export interface EntityGate {
  requireActive(organizationId: string, id: string): Promise<unknown>;
  activeCondition(refs: Refs<'id' | 'organizationId'>): RawBuilder<boolean>;
}
export interface DestinationLookup {
  getFiatAccount(organizationId: string, id: string): Promise<FiatAccountFacts>;
  getCryptoWallet(organizationId: string, id: string): Promise<CryptoWalletFacts>;
  recentFiatAccount(organizationId: string, id: string): FiatAccountFacts | undefined;
  recentCryptoWallet(organizationId: string, id: string): CryptoWalletFacts | undefined;
  currentVersionCondition(refs: Refs<'kind' | 'id' | 'organizationId' | 'version'>): RawBuilder<boolean>;
}

/**
 * Which options transfers have taken. A transfer owns that fact (one transfer per option, by the
 * UNIQUE on its quote_option_id), so quotes ask for it rather than keep a copy of it.
 */
export interface OptionUsage {
  takenOptions(optionIds: string[]): Promise<Set<string>>;
}

export interface QuoteServiceOptions {
  db: Kysely<any>;
  providers: ProviderDirectory;
  rails: RailDirectory;
  entities: EntityGate;
  destinations: DestinationLookup;
  ttlSeconds: number;
}

export const describeRail = (rail: Rail): string =>
  rail.type === 'FIAT' ? `${rail.country}/${rail.currency}/${rail.method}` : `${rail.asset} on ${rail.blockchain}`;

/** Drops anything a client sent beyond the rail's identifying fields. */
const railOf = (route: QuoteRequest['from']): Rail =>
  route.type === 'FIAT'
    ? { type: 'FIAT', country: route.country, currency: route.currency, method: route.method }
    : { type: 'CRYPTO', blockchain: route.blockchain, asset: route.asset };

export class QuoteService {
  readonly #repo: QuoteRepository;
  readonly #providers: ProviderDirectory;
  readonly #rails: RailDirectory;
  readonly #entities: EntityGate;
  readonly #destinations: DestinationLookup;
  readonly #ttlSeconds: number;
  #usage: OptionUsage | null = null;
  // The options this process made, until they expire: the transfer that takes one, moments later,
  // reads nothing to know it (it guards the write with openOptionCondition instead).
  // Kept as rows, made into options only for the one a transfer asks for.
  readonly #recentOptions = new RecentMemory<OptionWithQuoteRow>({ capacity: 50_000, ttlMs: 60_000 });

  constructor(options: QuoteServiceOptions) {
    // A quote made from what this process read lately (#recentBinding) is written only if the
    // entity is still ACTIVE and the destination still at the version it was bound to.
    this.#repo = new QuoteRepository(
      options.db,
      (q) =>
        sql<boolean>`${unless(options.entities.activeCondition({ id: q.entityId, organizationId: q.organizationId }), 'entity not active')}
          and (${q.destinationId} is null or ${unless(options.destinations.currentVersionCondition({ kind: q.destinationType, id: q.destinationId, organizationId: q.organizationId, version: q.destinationVersion }), 'destination changed')})`,
    );
    this.#providers = options.providers;
    this.#rails = options.rails;
    this.#entities = options.entities;
    this.#destinations = options.destinations;
    this.#ttlSeconds = options.ttlSeconds;
  }

  /** Transfers are built after quotes (they take options); they are wired here once they exist. */
  useOptionUsage(usage: OptionUsage): void {
    this.#usage = usage;
  }

  async create(organizationId: string, request: QuoteRequest): Promise<QuoteView> {
    const fixedSide: FixedSide = request.fixedSide ?? 'FROM';
    const from = railOf(request.from);
    const to = railOf(request.to);
    if (request.destinationFiatAccountId && request.destinationCryptoWalletId) {
      throw validationError([{ path: 'destinationCryptoWalletId', message: 'give destinationFiatAccountId or destinationCryptoWalletId, not both' }]);
    }
    for (const [side, rail] of [['from', from], ['to', to]] as const) {
      const known = rail.type === 'FIAT' ? this.#rails.hasFiatRail(rail) : this.#rails.hasCryptoRail(rail);
      if (!known) throw unprocessable('unsupported_route', `The rail directory has no ${rail.type} rail ${describeRail(rail)} (${side}); see GET /v1/rails`);
    }
    const fixedAsset = railAsset(fixedSide === 'FROM' ? from : to);
    const amount = parseAmount(request.amount, fixedAsset);
    const priced = { organizationId, request, fixedSide, from, to, fixedAsset, amount };

    // What this process read of the entity and destination lately is trusted under a guard: the
    // insert checks it again. Anything else (nothing read lately, a check or the guard failing)
    // reads them afresh, and answers as it always did.
    const recent = this.#recentBinding(organizationId, request, to);
    if (recent !== undefined) {
      try {
        return await this.#store(priced, recent, await this.#search(from, to, fixedSide, amount), true);
      } catch (err) {
        if (!isGuardRefusal(err) && !(err instanceof ApiError)) throw err;
      }
    }
    const [, destination] = await allInOrder([this.#entities.requireActive(organizationId, request.entityId), this.#bindDestination(organizationId, request, to)] as const);
    return this.#store(priced, destination, await this.#search(from, to, fixedSide, amount), false);
  }

  /** The option as its quote made it, if this process made it and it has not expired (and is the organization's). */
  recentOption(organizationId: string, optionId: string): QuoteOptionForTransfer | undefined {
    const row = this.#recentOptions.get(optionId);
    return row?.organization_id === organizationId ? toOptionForTransfer(row) : undefined;
  }

  /** A guard's condition (platform/db/guard.ts): the organization's option is still OPEN and unexpired. */
  openOptionCondition(refs: Refs<'id' | 'organizationId'>): RawBuilder<boolean> {
    return this.#repo.openOptionCondition(refs);
  }

  async #store(
    priced: { organizationId: string; request: QuoteRequest; fixedSide: FixedSide; from: Rail; to: Rail; fixedAsset: string; amount: bigint },
    destination: QuoteDestination | null,
    searched: { options: PricedPath[]; advisories: Advisory[] },
    guarded: boolean,
  ): Promise<QuoteView> {
    const { organizationId, request, fixedSide, from, to, fixedAsset, amount } = priced;
    const { options, advisories } = searched;
    const quoteId = newId();
    const stored = await this.#repo.insert(
      {
        id: quoteId,
        organization_id: organizationId,
        entity_id: request.entityId,
        fixed_side: fixedSide,
        amount: fromMinor(amount, fixedAsset),
        from_rail: from,
        to_rail: to,
        destination_type: destination?.type ?? null,
        destination_id: destination?.id ?? null,
        destination_version: destination?.version ?? null,
        active_only: request.activeOnly ?? false,
        advisories,
      },
      options.map((o, i) => ({
        id: newId(),
        rank: i + 1,
        from_asset: o.fromAsset,
        to_asset: o.toAsset,
        from_amount: fromMinor(o.fromAmount, o.fromAsset),
        to_amount: fromMinor(o.toAmount, o.toAsset),
        rate: o.rate,
        fees: o.fees,
        total_fee: fromMinor(o.totalFee, o.fromAsset),
        fee_currency: o.fromAsset,
        eta_seconds: o.etaSeconds,
        legs: o.legs.map(storedLeg),
      })),
      this.#ttlSeconds,
      guarded,
    );
    for (const option of stored.options) {
      this.#recentOptions.set(option.id, { ...stored.quote, ...option, effective_status: 'OPEN' }, { until: option.expires_at.getTime() });
    }
    return toQuoteView(stored.quote, stored.options);
  }

  /** The stored quote, each option USED once a transfer took it; 404 not_found for an unknown id or another organization's. */
  async get(organizationId: string, id: string): Promise<QuoteView> {
    const found = isUuid(id) ? await this.#repo.find(organizationId, id) : null;
    if (!found) throw notFound('Quote');
    const taken = this.#usage ? await this.#usage.takenOptions(found.options.map((o) => o.id)) : new Set<string>();
    const options = found.options.map((o) => (taken.has(o.id) ? { ...o, status: 'USED' as const } : o));
    return toQuoteView(found.quote, options);
  }

  /** One option with its quote, for the transfer engine; 404 not_found for an unknown id or another organization's. */
  async getOptionForTransfer(organizationId: string, optionId: string, db?: Kysely<any> | Transaction<any>): Promise<QuoteOptionForTransfer> {
    const row = isUuid(optionId) ? await this.#repo.findOption(organizationId, optionId, db) : undefined;
    if (!row) throw notFound('Quote option');
    return toOptionForTransfer(row);
  }

  /** The quotes.expire-options job: OPEN options past expiresAt become EXPIRED. */
  async expireOptions(): Promise<number> {
    return this.#repo.expireDue();
  }

  /**
   * The destination binding from what this process read of it lately, checked as
   * #bindDestination checks it: null when the quote names none, undefined when it must be read
   * (not read lately, or a check failed: the read answers with the current facts).
   */
  #recentBinding(organizationId: string, request: QuoteRequest, to: Rail): QuoteDestination | null | undefined {
    const fiatId = request.destinationFiatAccountId;
    const walletId = request.destinationCryptoWalletId;
    if (!fiatId && !walletId) return null;
    try {
      if (fiatId) {
        const account = this.#destinations.recentFiatAccount(organizationId, fiatId);
        return account && bindFiatAccount(account, request, to);
      }
      const wallet = this.#destinations.recentCryptoWallet(organizationId, walletId!);
      return wallet && bindCryptoWallet(wallet, request, to);
    } catch (err) {
      if (err instanceof ApiError) return undefined;
      throw err;
    }
  }

  async #bindDestination(organizationId: string, request: QuoteRequest, to: Rail): Promise<QuoteDestination | null> {
    const fiatId = request.destinationFiatAccountId;
    const walletId = request.destinationCryptoWalletId;
    if (!fiatId && !walletId) return null;
    if (fiatId) return bindFiatAccount(await this.#destinations.getFiatAccount(organizationId, fiatId), request, to);
    return bindCryptoWallet(await this.#destinations.getCryptoWallet(organizationId, walletId!), request, to);
  }

  async #search(from: Rail, to: Rail, fixedSide: FixedSide, amount: bigint): Promise<{ options: PricedPath[]; advisories: Advisory[] }> {
    const { paths, gaps } = searchPaths(from, to, this.#providers.all());
    const advisories: Advisory[] = gaps.map(gapAdvisory);
    const quotes = new Map<string, Promise<LegQuote | null>>();
    const priced: Array<{ path: Path; price: PricedPath }> = [];
    let belowFees = false;
    for (const path of paths) {
      const inputs = await Promise.all(path.map((leg) => this.#legInput(leg, quotes)));
      if (inputs.some((i) => i === null)) continue;
      const legs = inputs as LegPricingInput[];
      const price = fixedSide === 'FROM' ? priceForward(legs, amount) : priceBackward(legs, amount);
      if ('unpriceable' in price) {
        belowFees = true;
        continue;
      }
      priced.push({ path, price });
    }
    priced.sort((a, b) => compareOptions(a.price, b.price, fixedSide));
    const chosen = priced.slice(0, MAX_OPTIONS);
    if (!chosen.length && belowFees) {
      advisories.push({ code: 'amount_below_fees', severity: 'WARNING', message: 'The amount is too small: the fees of every path would take all of it' });
    }
    const degraded = new Map<string, string>();
    for (const { path } of chosen) for (const leg of path) if (leg.availability === 'DEGRADED') degraded.set(leg.provider.id, leg.provider.displayName);
    for (const name of [...degraded.values()].sort()) {
      advisories.push({ code: 'provider_degraded', severity: 'WARNING', message: `${name} is degraded: options through it may arrive later than their ETA` });
    }
    return { options: chosen.map((c) => c.price), advisories };
  }

  /** The provider's price for one hop, asked once per quote; null when the provider refuses. */
  #legInput(leg: LegCandidate, cache: Map<string, Promise<LegQuote | null>>): Promise<LegPricingInput | null> {
    const key = `${leg.provider.id}|${leg.kind}|${leg.fromAsset}|${leg.toAsset}|${leg.rail ? railKey(leg.rail) : ''}`;
    let quote = cache.get(key);
    if (!quote) {
      const provider = leg.provider as ProviderAdapter;
      // Sandbox and configured schedules do not depend on the amount, so one unit asks for the price.
      quote = provider
        .quoteLeg({ kind: leg.kind, fromAsset: leg.fromAsset, toAsset: leg.toAsset, amountIn: '1', ...(leg.rail ? { rail: leg.rail } : {}) })
        .catch((err: unknown) => {
          if (err instanceof ProviderError) return null;
          throw err;
        });
      cache.set(key, quote);
    }
    return quote.then((q) =>
      q === null
        ? null
        : {
            kind: leg.kind,
            providerId: leg.provider.id,
            provider: leg.provider.displayName,
            fromAsset: leg.fromAsset,
            toAsset: leg.toAsset,
            ...(leg.rail ? { rail: leg.rail } : {}),
            fees: q.fees,
            midRate: q.midRate,
            rate: q.rate,
            etaSeconds: q.etaSeconds,
          },
    );
  }
}

/** The amount as minor units of the fixed side's asset: positive, and no finer than the asset allows. */
function parseAmount(amount: string, asset: string): bigint {
  let minor: bigint;
  try {
    minor = parseClientAmount(amount, asset);
  } catch (err) {
    if (err instanceof MoneyError) throw validationError([{ path: 'amount', message: err.message }]);
    throw err;
  }
  if (minor <= 0n) throw validationError([{ path: 'amount', message: 'must be greater than zero' }]);
  return minor;
}

const mismatch = (message: string) => unprocessable('destination_mismatch', message);

/** The quote's binding to a fiat account: 422 destination_mismatch unless it is the entity's and on the `to` rail. */
function bindFiatAccount(account: FiatAccountFacts, request: QuoteRequest, to: Rail): QuoteDestination {
  if (account.entityId !== request.entityId) throw mismatch(`Fiat account ${account.id} belongs to another entity`);
  const rail: Rail = { type: 'FIAT', country: account.rail.country, currency: account.rail.currency, method: account.rail.method as FiatMethod };
  if (railKey(rail) !== railKey(to)) throw mismatch(`Fiat account ${account.id} is on ${describeRail(rail)}, not on the quote's \`to\` rail ${describeRail(to)}`);
  return { type: 'FIAT_ACCOUNT', id: account.id, version: account.version };
}

/** The quote's binding to a crypto wallet, checked as bindFiatAccount checks a fiat account. */
function bindCryptoWallet(wallet: CryptoWalletFacts, request: QuoteRequest, to: Rail): QuoteDestination {
  if (wallet.entityId !== request.entityId) throw mismatch(`Crypto wallet ${wallet.id} belongs to another entity`);
  const rail: Rail = { type: 'CRYPTO', blockchain: wallet.blockchain, asset: wallet.asset };
  if (railKey(rail) !== railKey(to)) throw mismatch(`Crypto wallet ${wallet.id} is on ${describeRail(rail)}, not on the quote's \`to\` rail ${describeRail(to)}`);
  return { type: 'CRYPTO_WALLET', id: wallet.id, version: wallet.version };
}

/** Cheapest delivered first: most received (FROM) or least sent (TO), then the faster, then fewer legs. */
function compareOptions(a: PricedPath, b: PricedPath, fixedSide: FixedSide): number {
  const primary = fixedSide === 'FROM' ? cmp(b.toAmount, a.toAmount) : cmp(a.fromAmount, b.fromAmount);
  return primary || a.etaSeconds - b.etaSeconds || a.legs.length - b.legs.length;
}

const cmp = (x: bigint, y: bigint): number => (x < y ? -1 : x > y ? 1 : 0);

function gapAdvisory(gap: Gap): Advisory {
  switch (gap.code) {
    case 'no_active_provider':
      return {
        code: 'no_active_provider',
        severity: 'WARNING',
        message:
          gap.stage === 'CONVERSION'
            ? `Every provider converting ${gap.fromAsset} to ${gap.toAsset} is down; no option can use that conversion until one is back`
            : `Every provider ${gap.stage === 'COLLECTION' ? 'collecting on' : 'paying out on'} ${describeRail(gap.rail)} is down; no option is available until one is back`,
      };
    case 'no_provider':
      return {
        code: 'no_provider',
        severity: 'WARNING',
        message: `No provider ${gap.stage === 'COLLECTION' ? 'collects funds on' : 'pays out on'} ${describeRail(gap.rail)}`,
      };
    case 'no_conversion_path':
      return {
        code: 'no_conversion_path',
        severity: 'WARNING',
        message: `No provider converts ${gap.fromAsset} to ${gap.toAsset}, directly or through one intermediate asset`,
      };
  }
}

function storedLeg(leg: PricedPath['legs'][number]): StoredLeg {
  return {
    position: leg.position,
    kind: leg.kind,
    providerId: leg.providerId,
    provider: leg.provider,
    fromAsset: leg.fromAsset,
    toAsset: leg.toAsset,
    amountIn: fromMinor(leg.amountIn, leg.fromAsset),
    amountOut: fromMinor(leg.amountOut, leg.toAsset),
    rate: leg.rate,
    ...(leg.rail ? { rail: leg.rail } : {}),
    fee: fromMinor(leg.fee, leg.fromAsset),
    midRate: leg.midRate,
    etaSeconds: leg.etaSeconds,
  };
}

function toOptionView(row: QuoteOptionRow, createdAt: Date): QuoteOptionView {
  const legs = row.legs as StoredLeg[];
  return {
    id: row.id,
    status: row.status,
    fromAsset: row.from_asset,
    toAsset: row.to_asset,
    fromAmount: fromMinor(toMinor(row.from_amount, row.from_asset), row.from_asset),
    toAmount: fromMinor(toMinor(row.to_amount, row.to_asset), row.to_asset),
    rate: row.rate,
    fees: row.fees as PricedFee[],
    totalFee: fromMinor(toMinor(row.total_fee, row.fee_currency), row.fee_currency),
    feeCurrency: row.fee_currency,
    eta: { seconds: row.eta_seconds, estimatedArrivalAt: iso(new Date(createdAt.getTime() + row.eta_seconds * 1000)) },
    expiresAt: iso(row.expires_at),
    legs: legs.map((l) => ({ position: l.position, kind: l.kind, provider: l.provider, fromAsset: l.fromAsset, toAsset: l.toAsset })),
  };
}

function toQuoteView(quote: QuoteRow, options: QuoteOptionRow[]): QuoteView {
  const from = quote.from_rail as Rail;
  const to = quote.to_rail as Rail;
  const fixedAsset = railAsset(quote.fixed_side === 'FROM' ? from : to);
  return {
    id: quote.id,
    entityId: quote.entity_id,
    from,
    to,
    amount: fromMinor(toMinor(quote.amount, fixedAsset), fixedAsset),
    fixedSide: quote.fixed_side,
    activeOnly: quote.active_only,
    destination: destinationOf(quote),
    options: options.map((o) => toOptionView(o, quote.created_at)),
    advisories: quote.advisories as Advisory[],
    createdAt: iso(quote.created_at),
  };
}

function destinationOf(row: Pick<QuoteRow, 'destination_type' | 'destination_id' | 'destination_version'>): QuoteDestination | null {
  return row.destination_type && row.destination_id && row.destination_version !== null
    ? { type: row.destination_type, id: row.destination_id, version: row.destination_version }
    : null;
}

function toOptionForTransfer(row: OptionWithQuoteRow): QuoteOptionForTransfer {
  const from = row.from_rail as Rail;
  const to = row.to_rail as Rail;
  const fixedAsset = railAsset(row.fixed_side === 'FROM' ? from : to);
  const money = (value: string, asset: string) => fromMinor(toMinor(value, asset), asset);
  return {
    id: row.id,
    quoteId: row.quote_id,
    organizationId: row.organization_id,
    entityId: row.entity_id,
    status: row.effective_status,
    expiresAt: row.expires_at,
    from,
    to,
    fromAsset: row.from_asset,
    toAsset: row.to_asset,
    fromAmount: money(row.from_amount, row.from_asset),
    toAmount: money(row.to_amount, row.to_asset),
    rate: row.rate,
    fees: row.fees as PricedFee[],
    totalFee: money(row.total_fee, row.fee_currency),
    feeCurrency: row.fee_currency,
    etaSeconds: row.eta_seconds,
    requestAmount: money(row.amount, fixedAsset),
    fixedSide: row.fixed_side,
    destination: destinationOf(row),
    legs: row.legs as StoredLeg[],
  };
}
