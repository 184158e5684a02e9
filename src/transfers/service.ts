// Transfers: creation binds one quote option to a saved destination, exactly once; every later
// change goes through transition() (status) or changeLeg() (legs), which validate the move
// against the one state machine, append the timeline, post the ledger, raise the version and
// write the outbox event, all inside the caller's transaction.
import { sql } from 'kysely';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import { isGuardRefusal, unless } from '../platform/db/guard.ts';
import { RecentMemory } from '../platform/recent.ts';
import type { Environment } from '../platform/config.ts';
import { ApiError, notFound } from '../platform/http/errors.ts';
import { decodeCursor, pageOf } from '../platform/http/pagination.ts';
import { LOCK_NOT_AVAILABLE, isKeyTaken, requestFingerprint, requestInProgress } from '../platform/idempotency.ts';
import type { IdempotencyScope, IdempotencyStore, StoredResponse } from '../platform/idempotency.ts';
import { Batcher } from '../platform/batch.ts';
import { fromMinor, normalize, toMinor } from '../platform/money.ts';
import { iso, isoOrNull } from '../platform/time.ts';
import { railKey } from '../providers/adapter.ts';
import type { LegStatus, Rail } from '../providers/adapter.ts';
import type { EventService, NewEvent } from '../events/service.ts';
import { ACCOUNTS, move } from '../ledger/service.ts';
import type { LedgerService, Posting } from '../ledger/service.ts';
import type { QuoteOptionForTransfer } from '../quotes/service.ts';
import type { DestinationSnapshot } from '../destinations/service.ts';
import type { Actor, FundableTransfer, FundingService } from '../funding/service.ts';
import { TransferRepository, isOptionTaken } from './repository.ts';
import type { ChangeGuard, CreationGuard, CreationRefs, LegPatch, LegRow, NewCreation, NewLeg, NewTimelineRow, SandboxOutcome, TimelineRow, TransferDetailRow, TransferFilter, TransferRow } from './repository.ts';
import type { CreateTransferBody, OpsTransferListQuery, Transfer, TransferListQuery, TransferSummary } from './schemas.ts';
import { CANCELABLE, LEG_MOVES, blockingPartyOf, firstStage, isLegTerminal, isTerminal, refuseMove } from './state-machine.ts';
import type { TransferStatus } from './state-machine.ts';
import { isUuid, newId } from '../platform/ids.ts';
import { allInOrder } from '../platform/batch.ts';
import type { Logger } from '../platform/logger.ts';

/** A transfer for the API: the stored view as JSON text, or an object when it had to be built or completed. */
export type TransferBody = Transfer | string;

/**
 * The job that moves a transfer one step of execution; its handler is TransferEngine.step (which
 * also prepares a transfer still in PENDING_SETUP, should a step reach one).
 */
export const STEP_JOB = 'transfers.step';

/**
 * The job that prepares every transfer waiting in PENDING_SETUP (TransferEngine.setUpPending).
 * One such job is queued at a time, not one per transfer: the transfers table says durably what
 * needs setting up, and a job per creation (its insert in the creation's transaction, its fetch and
 * its completion) cost about 7% of a creation's CPU (docs/TRANSFERS.md).
 */
export const SETUP_JOB = 'transfers.setup';

/** Creations committed within this window share one queued setup job. */
const SETUP_REQUEST_WINDOW_MS = 50;

const CREATE_OPERATION = 'POST /v1/transfers';

/** One creation as it goes to the database with others: its rows, its response and its event. */
interface Creation {
  scope: IdempotencyScope;
  rows: NewCreation;
  /** The created transfer as the JSON text the API answers (and stores as the transfer's view). */
  view: string;
  event: NewEvent;
  /** Whether a subscriber (webhooks) wants the event: then it is recorded in a transaction that runs them. */
  subscribed: boolean;
  /** The transfer and its legs as the insert writes them (what setup starts from, without reading it). */
  written: TransferRow & { legs: LegRow[] };
}

/** Prepares transfers this process has just created, from the rows it wrote (TransferEngine.setUpCreated). */
export type CreatedSetup = (created: Array<TransferRow & { legs: LegRow[] }>) => Promise<void>;

// ---- What this service needs of its neighbours: their own types, narrowed to what is used. ----

export type QuoteOption = QuoteOptionForTransfer;

type Refs<K extends string> = Record<K, RawBuilder<unknown>>;
type DestinationRef = { type: 'FIAT_ACCOUNT' | 'CRYPTO_WALLET'; id: string };

// Each neighbour answers a read, and says the same as a guard's condition (platform/db/guard.ts)
// for a creation made from what this process read lately (TransferService.create).
export interface QuotesPort {
  getOptionForTransfer(organizationId: string, optionId: string, db?: Kysely<any> | Transaction<any>): Promise<QuoteOption>;
  recentOption(organizationId: string, optionId: string): QuoteOption | undefined;
  openOptionCondition(refs: Refs<'id' | 'organizationId'>): RawBuilder<boolean>;
}

export interface EntitiesPort {
  get(organizationId: string, id: string): Promise<unknown>;
  requireActive(organizationId: string, id: string): Promise<unknown>;
  activeCondition(refs: Refs<'id' | 'organizationId'>): RawBuilder<boolean>;
}

export interface DestinationsPort {
  snapshot(organizationId: string, ref: DestinationRef): Promise<DestinationSnapshot>;
  recentSnapshot(organizationId: string, ref: DestinationRef): DestinationSnapshot | undefined;
  currentVersionCondition(refs: Refs<'kind' | 'id' | 'organizationId' | 'version'>): RawBuilder<boolean>;
}

type EventsPort = Pick<EventService, 'record' | 'recordMany' | 'needSubscribers' | 'insertPart' | 'unsubscribedCondition'>;

export type FundingPort = Pick<FundingService, 'activeInstructions' | 'closeActiveSession'>;

export interface StepScheduler {
  send(name: string, data: object, options: { trx?: Transaction<any>; startAfter?: Date; singletonKey?: string }): Promise<string | null>;
}

export interface TransitionRequest {
  organizationId?: string | null;
  transferId: string;
  to: TransferStatus;
  reason?: string | null;
  actor?: Actor;
  /** Funds arriving with this move (into IN_PROGRESS): the amount received, in the source asset. */
  fundsReceived?: { amount: string };
}

export interface LegChange {
  status: LegStatus;
  progressStage: string;
  providerReference?: string;
  actualAmountIn?: string;
  actualAmountOut?: string;
  reason?: string | null;
}

export interface TransferServiceOptions {
  db: Kysely<any>;
  env: Environment;
  quotes: QuotesPort;
  entities: EntitiesPort;
  destinations: DestinationsPort | null;
  events: EventsPort;
  ledger: LedgerService;
  idempotency: IdempotencyStore;
  scheduler: StepScheduler;
  /** Seconds between simulated execution steps at speed 1 (divided by CORRIDOR_SANDBOX_SPEED). */
  stepDelayMs: number;
  log?: Pick<Logger, 'warn'>;
}

/** The sandbox outcome a quote request's amount asks for (DECISIONS.md §6): its fraction decides. */
export function magicOutcome(requestAmount: string): SandboxOutcome {
  const fraction = (requestAmount.split('.')[1] ?? '').replace(/0+$/, '');
  switch (fraction) {
    case '91':
      return 'FAIL';
    case '92':
      return 'RETURN';
    case '93':
      return 'REVIEW';
    case '94':
      return 'REFUND';
    default:
      return 'SUCCEED';
  }
}

const sameRail = (a: DestinationSnapshot['rail'], b: Rail): boolean => railKey(a) === railKey(b);

const destinationRefOf = (body: CreateTransferBody): DestinationRef =>
  body.destination.type === 'FIAT_ACCOUNT' ? { type: 'FIAT_ACCOUNT', id: body.destination.fiatAccountId } : { type: 'CRYPTO_WALLET', id: body.destination.cryptoWalletId };

/** A creation's checks of its option, in the order they are answered. */
function checkOption(body: CreateTransferBody, option: QuoteOption, taken: boolean): void {
  if (option.entityId !== body.entityId) {
    throw new ApiError(422, 'quote_entity_mismatch', `Quote option ${option.id} was made for another entity; quote again for entity ${body.entityId}`);
  }
  if (option.status === 'USED' || taken) throw quoteOptionUsed();
  if (option.status === 'EXPIRED' || option.expiresAt.getTime() <= Date.now()) throw quoteExpired();
}

/** A creation's checks of its destination against the option, after checkOption. */
function checkDestination(body: CreateTransferBody, ref: DestinationRef, option: QuoteOption, snapshot: DestinationSnapshot): void {
  if (option.destination && (option.destination.type !== ref.type || option.destination.id !== ref.id)) {
    throw destinationMismatch(`Quote option ${option.id} was quoted for ${option.destination.type} ${option.destination.id}, not for ${ref.type} ${ref.id}`);
  }
  if (option.destination && snapshot.version !== option.destination.version) {
    throw new ApiError(
      409,
      'quote_destination_changed',
      `The destination was edited since it was quoted (quoted version ${option.destination.version}, now ${snapshot.version}); request a new quote`,
    );
  }
  if (snapshot.entityId !== body.entityId) throw destinationMismatch(`${ref.type} ${ref.id} belongs to another entity`);
  if (!sameRail(snapshot.rail, option.to)) throw destinationMismatch(`${ref.type} ${ref.id} is not on the option's destination rail ${railKey(option.to)}`);
}

/** The stage of the leg under way: the first that has not completed, else the last. */
function currentStage(legs: Array<Pick<LegRow, 'status' | 'progress_stage'>>): string | null {
  const open = legs.find((l) => l.status !== 'COMPLETED');
  return (open ?? legs[legs.length - 1])?.progress_stage ?? null;
}

export class TransferService {
  readonly #db: Kysely<any>;
  readonly #repo: TransferRepository;
  readonly #env: Environment;
  readonly #quotes: QuotesPort;
  readonly #entities: EntitiesPort;
  #destinations: DestinationsPort | null;
  readonly #events: EventsPort;
  readonly #ledger: LedgerService;
  readonly #idempotency: IdempotencyStore;
  readonly #scheduler: StepScheduler;
  readonly #stepDelayMs: number;
  readonly #log: Pick<Logger, 'warn'> | null;
  #funding: FundingPort | null = null;
  #setupRequest: NodeJS.Timeout | null = null;
  #setUpCreated: CreatedSetup | null = null;
  readonly #creations = new Batcher<Creation, void>((batch) => this.#createMany(batch));
  // Organizations whose creations lately had subscribers for their events: a creation made from
  // recent reads records its events in a transaction for them rather than guard against them.
  readonly #subscribedLately = new RecentMemory<true>({ capacity: 10_000, ttlMs: 10_000 });
  #creationGuards: { subscribersRun: CreationGuard; eventsOnly: CreationGuard | null; setupEventsOnly: ChangeGuard | null } | null = null;

  constructor(options: TransferServiceOptions) {
    this.#db = options.db;
    this.#repo = new TransferRepository(options.db);
    this.#env = options.env;
    this.#quotes = options.quotes;
    this.#entities = options.entities;
    this.#destinations = options.destinations;
    this.#events = options.events;
    this.#ledger = options.ledger;
    this.#idempotency = options.idempotency;
    this.#scheduler = options.scheduler;
    this.#stepDelayMs = options.stepDelayMs;
    this.#log = options.log ?? null;
  }

  /** Funding is built after this service (it calls transition()); it is wired here once it exists. */
  useFunding(funding: FundingPort): void {
    this.#funding = funding;
  }

  /**
   * Where this process runs the job workers, setup starts from the rows a creation wrote as soon
   * as they commit, instead of from the setup job reading them back.
   */
  useCreatedSetup(setup: CreatedSetup): void {
    this.#setUpCreated = setup;
  }

  useDestinations(destinations: DestinationsPort): void {
    this.#destinations = destinations;
  }

  get repository(): TransferRepository {
    return this.#repo;
  }

  get stepDelayMs(): number {
    return this.#stepDelayMs;
  }

  // ---------------------------------------------------------------------------------------------
  // Creation
  // ---------------------------------------------------------------------------------------------

  /**
   * POST /v1/transfers. The references are read and checked first, outside any transaction; the
   * transfer is then written by one statement together with its stored response and its event,
   * shared with the creations arriving at the same moment (#createMany). The key is looked at
   * only when something stands in the way: a key that already answered replays its response (a
   * replay is never refused for a reason that arose after the original succeeded, such as the
   * option being used by it), and a key or option someone else took first answers what they took
   * it for.
   */
  async create(organizationId: string, key: string, body: CreateTransferBody): Promise<StoredResponse<TransferBody>> {
    const scope = { organizationId, operation: CREATE_OPERATION, key, requestHash: requestFingerprint(body) };
    // A transfer on an option this process quoted a moment ago reads nothing: the option, the
    // destination's snapshot and the answer about subscribers are what this process last saw,
    // and the creation's statement checks them again (#guards). Should one no longer hold, the
    // creation is made as any other, from fresh reads.
    const recent = this.#recentPreparation(organizationId, body);
    if (recent) {
      const subscribed = this.#guards.eventsOnly === null || this.#subscribedLately.get(organizationId) === true;
      const creation = this.#plan(organizationId, scope, body, recent, subscribed, true);
      try {
        return await this.#write(creation);
      } catch (err) {
        if (!isGuardRefusal(err)) throw err;
      }
    }
    // Read beside the references: whether the creation's event has subscribers (webhooks).
    const subscribedRead = this.#events.needSubscribers([{ organizationId, type: 'transfer.status_changed' }]);
    subscribedRead.catch(() => {});
    let prepared: Awaited<ReturnType<TransferService['prepareCreation']>>;
    try {
      prepared = await this.prepareCreation(organizationId, body);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const stored = await this.#idempotency.stored<Transfer>(scope);
      if (stored) return stored;
      throw err;
    }
    const subscribed = await subscribedRead;
    if (subscribed) this.#subscribedLately.set(organizationId, true);
    else this.#subscribedLately.delete(organizationId);
    return this.#write(this.#plan(organizationId, scope, body, prepared, subscribed, false));
  }

  /**
   * What a creation made from recent reads must find still true when it is written: the entity
   * ACTIVE, the option OPEN and unexpired, the destination at the version snapshotted and, when
   * its events are written without running subscribers, no subscriber for them. eventsOnly is
   * null when a subscriber cannot say so as a condition (such creations then run subscribers).
   */
  get #guards(): { subscribersRun: CreationGuard; eventsOnly: CreationGuard | null; setupEventsOnly: ChangeGuard | null } {
    if (this.#creationGuards) return this.#creationGuards;
    const entities = this.#entities;
    const quotes = this.#quotes;
    const destinations = this.#destinations;
    const facts = (t: CreationRefs) =>
      sql<boolean>`${unless(entities.activeCondition({ id: t.entityId, organizationId: t.organizationId }), 'entity not active')}
        and ${unless(quotes.openOptionCondition({ id: t.quoteOptionId, organizationId: t.organizationId }), 'option not open')}
        and ${destinations ? unless(destinations.currentVersionCondition({ kind: t.destinationType, id: t.destinationId, organizationId: t.organizationId, version: t.destinationVersion }), 'destination changed') : unless(sql<boolean>`false`, 'no destinations')}`;
    // Whether every subscriber can say "none for this organization and type" as a condition.
    const guardable = this.#events.unsubscribedCondition({ organizationId: sql.lit(null), type: sql.lit(null) }) !== null;
    const unsubscribed = (organizationId: RawBuilder<unknown>, type: string) => unless(this.#events.unsubscribedCondition({ organizationId, type: sql.lit(type) })!, 'subscribers');
    const guards = {
      subscribersRun: { name: 'facts', condition: facts },
      eventsOnly: guardable
        ? { name: 'facts-unsubscribed', condition: (t: CreationRefs) => sql<boolean>`${facts(t)} and ${unsubscribed(t.organizationId, 'transfer.status_changed')}` }
        : null,
      // A setup's events: the leg handed to its provider, and READY_TO_FUND.
      setupEventsOnly: guardable
        ? {
            name: 'setup-unsubscribed',
            condition: (t: { organizationId: RawBuilder<unknown> }) =>
              sql<boolean>`${unsubscribed(t.organizationId, 'transfer.leg_status_changed')} and ${unsubscribed(t.organizationId, 'transfer.status_changed')}`,
          }
        : null,
    };
    // Kept once the neighbours are all wired (destinations come after construction).
    if (destinations) this.#creationGuards = guards;
    return guards;
  }

  /** Writes a planned creation with the others of the moment; answers what its key is to answer. */
  async #write(creation: Creation): Promise<StoredResponse<TransferBody>> {
    const { scope } = creation;
    try {
      await this.#creations.submit(creation);
    } catch (err) {
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) throw requestInProgress();
      // Someone got there first: this same request under this key (replay it), a different one
      // under it, or another request that took the option.
      if (!isKeyTaken(err) && !isOptionTaken(err)) throw err;
      const stored = await this.#idempotency.stored<Transfer>(scope);
      if (stored) return stored;
      throw isKeyTaken(err) ? requestInProgress() : quoteOptionUsed();
    }
    return { status: 201, body: creation.view, replayed: false };
  }

  /**
   * Writes a batch of creations: the transfers with their legs and first timeline items, their
   * stored responses and their events, in one statement (one round trip, one commit), or in one
   * transaction when subscribers must see the events. An option or a key someone took meanwhile
   * fails the whole batch, which the Batcher then writes one creation at a time.
   */
  async #createMany(batch: Creation[]): Promise<void[]> {
    const rows = batch.map((c) => c.rows);
    const stored = this.#idempotency.completedPart(batch.map((c) => ({ scope: c.scope, status: 201, body: c.view })));
    const events = batch.map((c) => c.event);
    const lockWaitMs = this.#idempotency.waitMs;
    if (batch.some((c) => c.subscribed)) {
      // Someone subscribes to these events (webhooks): they are recorded in the transaction, where
      // the subscribers queue their work.
      await this.#db.transaction().execute(async (trx) => {
        await this.#repo.insertMany(trx, rows, { lockWaitMs, alongside: [stored], guard: this.#guards.subscribersRun });
        await this.#events.recordMany(trx, events);
      });
    } else {
      await this.#repo.insertMany(this.#db, rows, { lockWaitMs, alongside: [stored, this.#events.insertPart(events)], guard: this.#guards.eventsOnly ?? this.#guards.subscribersRun });
    }
    this.#setUp(batch.map((c) => c.written));
    return batch.map(() => undefined);
  }

  /** Which of these quote options a transfer has taken (one transfer per option). */
  async takenOptions(optionIds: string[]): Promise<Set<string>> {
    return this.#repo.takenOptions(optionIds);
  }

  /** Every check that does not need the transaction; returns what the insert needs. */
  async prepareCreation(organizationId: string, body: CreateTransferBody) {
    const ref = destinationRefOf(body);
    if (!this.#destinations) throw new ApiError(501, 'not_implemented', 'Saved destinations are not available in this build');
    // Read together; refused in the order they were checked one by one: entity, option, destination.
    const snapshotRead = this.#destinations.snapshot(organizationId, ref);
    snapshotRead.catch(() => {});
    const takenRead = isUuid(body.quoteOptionId) ? this.#repo.takenOptions([body.quoteOptionId]) : Promise.resolve(new Set<string>());
    const [, option, taken] = await allInOrder([this.#entities.requireActive(organizationId, body.entityId), this.#quotes.getOptionForTransfer(organizationId, body.quoteOptionId), takenRead] as const);
    checkOption(body, option, taken.has(option.id));
    // A destination the organization does not have (another organization's) is 404 not_found,
    // like every other reference, before it is compared with the option.
    const snapshot = await snapshotRead;
    checkDestination(body, ref, option, snapshot);
    return { option, snapshot };
  }

  /**
   * What prepareCreation() would answer, from what this process read lately (the option it
   * quoted, the destination it read for that quote), passing the same checks; undefined when
   * something is missing or a check fails (the reads then answer with the current facts).
   * The entity's status, the option being open and the destination's version are left to the
   * creation's guard.
   */
  #recentPreparation(organizationId: string, body: CreateTransferBody): { option: QuoteOption; snapshot: DestinationSnapshot } | undefined {
    if (!this.#destinations) return undefined;
    const option = this.#quotes.recentOption(organizationId, body.quoteOptionId);
    if (!option) return undefined;
    const ref = destinationRefOf(body);
    const snapshot = this.#destinations.recentSnapshot(organizationId, ref);
    if (!snapshot) return undefined;
    try {
      checkOption(body, option, false);
      checkDestination(body, ref, option, snapshot);
    } catch (err) {
      if (err instanceof ApiError) return undefined;
      throw err;
    }
    return { option, snapshot };
  }

  /** The rows, view and event of a new transfer, worked out in memory. */
  #plan(organizationId: string, scope: IdempotencyScope, body: CreateTransferBody, prepared: { option: QuoteOption; snapshot: DestinationSnapshot }, subscribed: boolean, guarded: boolean): Creation {
    const { option, snapshot } = prepared;
    const id = newId();
    const status: TransferStatus = 'PENDING_SETUP';
    const legs: NewLeg[] = option.legs
      .slice()
      .sort((a, b) => a.position - b.position)
      .map((l) => ({
        id: newId(),
        transfer_id: id,
        position: l.position,
        kind: l.kind,
        provider_id: l.providerId,
        provider_name: l.provider,
        provider_reference: null,
        status: 'PENDING',
        progress_stage: firstStage(l.kind),
        from_asset: l.fromAsset,
        to_asset: l.toAsset,
        rail: l.rail ?? null,
        quoted_amount_in: normalize(l.amountIn, l.fromAsset),
        quoted_amount_out: normalize(l.amountOut, l.toAsset),
        quoted_fee: normalize(l.fee ?? '0', l.fromAsset),
        quoted_rate: l.rate,
      }));
    const row: Omit<TransferRow, 'created_at' | 'updated_at' | 'version' | 'funds_received_at' | 'reviewed_at' | 'api_view'> = {
      id,
      organization_id: organizationId,
      entity_id: body.entityId,
      quote_id: option.quoteId,
      quote_option_id: option.id,
      status,
      blocking_party: blockingPartyOf(status),
      status_reason: null,
      client_reference: body.clientReference ?? null,
      payment_references: body.paymentReferences ?? null,
      original_message_id: body.paymentReferences?.originalMessageId ?? null,
      from_rail: option.from,
      to_rail: option.to,
      source_asset: option.fromAsset,
      destination_asset: option.toAsset,
      fee_currency: option.feeCurrency,
      quoted_source_amount: normalize(option.fromAmount, option.fromAsset),
      quoted_destination_amount: normalize(option.toAmount, option.toAsset),
      quoted_fee_total: normalize(option.totalFee, option.feeCurrency),
      quoted_rate: option.rate,
      actual_source_amount: null,
      actual_destination_amount: null,
      actual_fee_total: null,
      destination_type: snapshot.type,
      destination_id: snapshot.id,
      destination_version: snapshot.version,
      destination_relationship: snapshot.relationship,
      destination_snapshot: {
        type: snapshot.type,
        id: snapshot.id,
        version: snapshot.version,
        relationship: snapshot.relationship,
        entityId: snapshot.entityId,
        rail: snapshot.rail,
        instructions: snapshot.instructions,
      },
      sandbox_outcome: this.#env === 'sandbox' ? magicOutcome(option.requestAmount) : null,
    };
    const first: Omit<TimelineRow, 'sequence' | 'occurred_at'> = {
      id: newId(),
      transfer_id: id,
      organization_id: organizationId,
      kind: 'STATUS',
      from_status: null,
      to_status: status,
      blocking_party: row.blocking_party,
      reason: null,
      leg_position: null,
      leg_status: null,
      progress_stage: currentStage(legs),
      version: 1,
    };
    // The clock of this process stamps the creation, so the stored API view and the rows agree.
    const createdAt = new Date();
    const full: TransferDetailRow = {
      ...row,
      version: 1,
      funds_received_at: null,
      reviewed_at: null,
      api_view: null,
      created_at: createdAt,
      updated_at: createdAt,
      legs: legs.map((l) => ({ ...l, actual_amount_in: null, actual_amount_out: null, status_reason: null, created_at: createdAt, updated_at: createdAt })),
      timeline: [{ ...first, sequence: '0', occurred_at: createdAt }],
    };
    const view = JSON.stringify(toTransfer(full, null));
    const { timeline: _timeline, ...written } = full;
    return {
      scope,
      subscribed,
      written: { ...written, api_view: view },
      // Where this process sets up what it creates, setup stores the first view moments later
      // (a GET before then builds it from the rows): stored here too, it was written twice within
      // 50 ms, 3% of a creation's CPU (2026-11-26, alternating runs).
      rows: { transfer: { ...row, api_view: this.#setUpCreated ? null : view }, legs, first, createdAt, guarded },
      view,
      event: {
        id: first.id,
        occurredAt: createdAt,
        organizationId,
        type: 'transfer.status_changed',
        data: { transferId: id, status, previousStatus: null, blockingParty: row.blocking_party, version: 1 },
      },
    };
  }

  /**
   * Asks for a setup job after a creation committed. Requests within a short window share one
   * send, made after all of them committed, so the job it queues sees every one of them. Should
   * the send fail, or the process die first, the engine's sweep (at start, then every minute)
   * queues the setup instead: the transfer waits in PENDING_SETUP, it is not lost.
   */
  requestSetup(): void {
    if (this.#setupRequest) return;
    this.#setupRequest = setTimeout(() => {
      this.#setupRequest = null;
      this.sendSetup().catch((err: unknown) => this.#log?.warn({ err }, 'could not queue the setup job; the sweep will'));
    }, SETUP_REQUEST_WINDOW_MS);
    this.#setupRequest.unref();
  }

  /** Sends a setup request still waiting for its window (shutdown: before the queue stops). */
  async flushSetupRequest(): Promise<void> {
    if (!this.#setupRequest) return;
    clearTimeout(this.#setupRequest);
    this.#setupRequest = null;
    await this.sendSetup().catch((err: unknown) => this.#log?.warn({ err }, 'could not queue the setup job; the sweep will'));
  }

  /**
   * Starts the setup of transfers just committed: from their rows when this process runs the
   * engine, else (or should that fail) by asking for the setup job.
   */
  #setUp(created: Array<TransferRow & { legs: LegRow[] }>): void {
    if (!this.#setUpCreated) return this.requestSetup();
    this.#setUpCreated(created).catch((err: unknown) => {
      this.#log?.warn({ err }, 'setting up created transfers failed; the setup job will');
      this.requestSetup();
    });
  }

  /** Queues the setup job now (outside any transaction); one already waiting makes this a no-op. */
  async sendSetup(): Promise<void> {
    await this.#scheduler.send(SETUP_JOB, {}, {});
  }

  /** Enqueues the transfer's next engine step inside the transaction (one queued step per transfer). */
  async scheduleStep(trx: Transaction<any>, transferId: string, delayMs = this.#stepDelayMs): Promise<void> {
    await this.#scheduler.send(STEP_JOB, { transferId }, { trx, singletonKey: transferId, ...(delayMs > 0 ? { startAfter: new Date(Date.now() + delayMs) } : {}) });
  }

  /** Re-sends a transfer's step outside any transaction (the sweep after a restart); a step already queued wins. */
  async scheduleSweepStep(transferId: string): Promise<void> {
    await this.#scheduler.send(STEP_JOB, { transferId }, { singletonKey: transferId });
  }

  // ---------------------------------------------------------------------------------------------
  // Reads
  // ---------------------------------------------------------------------------------------------

  /**
   * The transfer for the HTTP layer; 404 not_found otherwise. Answers the stored view as JSON
   * text (sent as is, not re-serialized) unless funding instructions have to join it.
   */
  async body(organizationId: string, id: string): Promise<TransferBody> {
    const found = isUuid(id) ? await this.#repo.view(organizationId, id) : undefined;
    if (!found) throw notFound('Transfer');
    const instructions = found.status === 'AWAITING_FUNDS' && this.#funding ? await this.#funding.activeInstructions(organizationId, id) : null;
    if (found.view && !instructions) return found.view;
    const transfer = found.view ? (JSON.parse(found.view) as Transfer) : await this.#fromTables(organizationId, id);
    return instructions ? { ...transfer, awaitingFundsInstructions: instructions as unknown as Record<string, unknown> } : transfer;
  }

  /** The transfer as its organization sees it, as an object; 404 not_found otherwise. */
  async get(organizationId: string, id: string): Promise<Transfer> {
    const found = await this.body(organizationId, id);
    return typeof found === 'string' ? (JSON.parse(found) as Transfer) : found;
  }

  /** The transfer built from its rows (legs, timeline) rather than from the stored view. */
  async #fromTables(organizationId: string | null, id: string): Promise<Transfer> {
    const row = await this.#repo.detail(organizationId, id);
    if (!row) throw notFound('Transfer');
    return toTransfer(row, null);
  }

  /** The rows' version of the transfer: what the stored view must always equal (tests compare them). */
  async fromTables(organizationId: string, id: string): Promise<Transfer> {
    return this.#fromTables(organizationId, id);
  }

  /** Any organization's transfer (operations staff, the engine); 404 not_found when unknown. */
  async getAny(id: string): Promise<Transfer & { organizationId: string }> {
    const found = isUuid(id) ? await this.#repo.view(null, id) : undefined;
    if (!found) throw notFound('Transfer');
    const transfer = found.view ? (JSON.parse(found.view) as Transfer) : await this.#fromTables(null, id);
    return { ...transfer, organizationId: found.organization_id };
  }

  async list(organizationId: string, query: TransferListQuery): Promise<{ data: TransferSummary[]; meta: { total: number; nextCursor: string | null } }> {
    // A filter naming an entity the organization does not have is 404, as reading it would be.
    if (query.entityId) await this.#entities.get(organizationId, query.entityId);
    const filter = { organizationId, status: query.status, entityId: query.entityId, createdFrom: query.createdFrom, createdTo: query.createdTo };
    const { data, meta } = await this.#page(filter, query.limit ?? 25, query.cursor);
    return { data: data.map(({ organizationId: _org, ...summary }) => summary), meta };
  }

  /** The operators' queue: one status (IN_REVIEW unless asked otherwise) across organizations, oldest first. */
  async listForReview(query: OpsTransferListQuery): Promise<{ data: Array<TransferSummary & { organizationId: string }>; meta: { total: number; nextCursor: string | null } }> {
    const filter = { organizationId: query.organizationId ?? null, status: query.status ?? 'IN_REVIEW' };
    return this.#page(filter, query.limit ?? 25, query.cursor);
  }

  async #page(filter: TransferFilter, limit: number, cursor: string | undefined) {
    const { rows, total } = await this.#repo.list(filter, limit, decodeCursor(cursor));
    const page = rows.slice(0, limit);
    const missing = page.filter((r) => !r.api_view).map((r) => r.id);
    const legs = await this.#repo.legsOf(missing);
    const byTransfer = new Map<string, LegRow[]>();
    for (const leg of legs) byTransfer.set(leg.transfer_id, [...(byTransfer.get(leg.transfer_id) ?? []), leg]);
    const items = rows.map((r) => {
      const summary: TransferSummary = r.api_view
        ? withoutTimeline(JSON.parse(r.api_view) as Transfer)
        : toSummary({ ...r, legs: byTransfer.get(r.id) ?? [], timeline: [] });
      return { ...summary, organizationId: r.organization_id, createdAt: r.created_at };
    });
    const { page: data, nextCursor } = pageOf(items, limit);
    return { data: data.map(({ createdAt, ...rest }) => ({ ...rest, createdAt: iso(createdAt) })), meta: { total, nextCursor } };
  }

  /** What funding needs of a transfer; 404 not_found for another organization's. */
  async getForFunding(organizationId: string, transferId: string, db?: Kysely<any> | Transaction<any>): Promise<FundableTransfer> {
    const row = isUuid(transferId) ? await this.#repo.find(transferId, db as Transaction<any> | undefined) : undefined;
    if (!row || row.organization_id !== organizationId) throw notFound('Transfer');
    const legs = await this.#repo.legs(transferId, db as Transaction<any> | undefined);
    const collection = legs.find((l) => l.kind === 'COLLECTION');
    return {
      id: row.id,
      status: row.status,
      sourceRail: row.from_rail,
      sourceAsset: row.source_asset,
      quotedSourceAmount: normalize(row.quoted_source_amount, row.source_asset),
      collectingProvider: collection?.provider_name ?? null,
    };
  }

  // ---------------------------------------------------------------------------------------------
  // The one status function
  // ---------------------------------------------------------------------------------------------

  /**
   * Moves a transfer to another status inside the caller's transaction: validates the move
   * against the state machine (409 invalid_transition otherwise), cancels legs that will never
   * run when the transfer ends, posts the ledger for the movement, appends the timeline, raises
   * the version and records transfer.status_changed. Returns the updated row.
   */
  async transition(trx: Transaction<any>, request: TransitionRequest): Promise<TransferRow> {
    const locked = await this.#repo.lock(trx, request.transferId, request.organizationId ?? undefined);
    if (!locked) throw notFound('Transfer');
    return this.transitionLocked(trx, locked, request);
  }

  /**
   * transition() for a row this transaction already locked. `current` is the transfer's legs as
   * this transaction last wrote them, when the caller has them (saves reading them again).
   */
  async transitionLocked(trx: Transaction<any>, locked: TransferRow, request: TransitionRequest, current?: LegRow[]): Promise<TransferRow> {
    let transfer = locked;
    const from = transfer.status;
    const to = request.to;
    const refusal = refuseMove(from, to, transfer.funds_received_at !== null);
    if (refusal) throw new ApiError(409, 'invalid_transition', refusal);

    let legs = current ?? (await this.#repo.legs(transfer.id, trx));
    if (isTerminal(to)) {
      // Legs that will never run end with the transfer, each as its own recorded change.
      const ended: LegRow[] = [];
      for (const leg of legs) {
        if (isLegTerminal(leg.status)) ended.push(leg);
        else {
          const changed = await this.changeLeg(trx, transfer, leg, { status: 'CANCELED', progressStage: leg.progress_stage, reason: null });
          transfer = changed.transfer;
          ended.push(changed.leg);
        }
      }
      legs = ended;
    }

    const now = new Date();
    const patch = movePatch(transfer, to, request.reason ?? null, now);
    if (to === 'IN_PROGRESS' && !transfer.funds_received_at) {
      const amount = normalize(request.fundsReceived?.amount ?? transfer.quoted_source_amount, transfer.source_asset);
      patch.funds_received_at = now;
      patch.actual_source_amount = amount;
      await this.#ledger.post(trx, {
        key: `${transfer.id}:FUNDS_IN`,
        organizationId: transfer.organization_id,
        transferId: transfer.id,
        kind: 'FUNDS_IN',
        description: `Funds received for transfer ${transfer.id}`,
        postings: move(ACCOUNTS.CUSTOMER_EXTERNAL, ACCOUNTS.CUSTOMER_FUNDS_HELD, transfer.source_asset, toMinor(amount, transfer.source_asset)),
      });
    }
    if (from === 'IN_REVIEW') patch.reviewed_at = now;
    if (to === 'COMPLETED') {
      const payout = [...legs].reverse().find((l) => l.kind === 'PAYOUT') ?? legs[legs.length - 1];
      patch.actual_destination_amount = payout ? normalize(payout.actual_amount_out ?? payout.quoted_amount_out, transfer.destination_asset) : null;
      patch.actual_fee_total = transfer.quoted_fee_total;
    }
    if (isTerminal(to) && to !== 'COMPLETED' && transfer.funds_received_at) {
      await this.#giveBack(trx, transfer, to === 'REFUNDED' ? 'REFUND' : 'RETURN_TO_CUSTOMER');
      patch.actual_fee_total = fromMinor(0n, transfer.fee_currency);
    }
    // Leaving AWAITING_FUNDS other than by expiry: the open session has done its job (funds
    // arrived) or can no longer be used (canceled, in review).
    if (this.#funding && from === 'AWAITING_FUNDS' && to !== 'READY_TO_FUND') {
      await this.#funding.closeActiveSession(trx, { transferId: transfer.id, status: to === 'IN_PROGRESS' ? 'COMPLETED' : 'EXPIRED' });
    }

    const change = statusChange(transfer, patch, legs, now);
    transfer = await this.#repo.updateWithTimeline(trx, transfer.id, { ...patch, api_view: change.transfer.api_view }, change.item, now);
    await this.#events.record(trx, change.event);
    return transfer;
  }

  /**
   * Setup's changes for several transfers this transaction has locked, all in PENDING_SETUP:
   * for each, the state the provider gave the handed leg (when one was handed), then
   * READY_TO_FUND. They are the changes changeLeg() and transitionLocked() record (validated
   * against the same moves, with the same timeline items, versions, views, ledger postings and
   * events), written for every transfer in one statement and their events in one more: alone,
   * each transfer's setup was four.
   */
  async completeSetups(trx: Transaction<any>, setups: SetupChange[]): Promise<void> {
    const planned = this.#planSetups(setups);
    for (const movement of planned.movements) await this.#postLegMovement(trx, movement.transfer, movement.before, movement.after);
    await this.#repo.writeChanges(trx, planned.write);
    await this.#events.recordMany(trx, planned.changes.map((c) => c.event));
  }

  /**
   * completeSetups() without a transaction, for transfers this process has just created (it
   * knows their rows and versions): one statement writes the changes and their events, guarded
   * (platform/db/guard.ts) so that it writes nothing unless every transfer is still at the
   * version it was created with and no webhook endpoint takes the events. Answers false, having
   * written nothing, for setups that post to the ledger or whose events subscribers must see:
   * those take completeSetups(). A guard that fails throws (isGuardRefusal).
   */
  async completeCreatedSetups(setups: SetupChange[]): Promise<boolean> {
    if (!setups.length) return true;
    const guard = this.#guards.setupEventsOnly;
    if (!guard || setups.some((s) => this.#subscribedLately.get(s.locked.organization_id))) return false;
    const planned = this.#planSetups(setups);
    if (planned.movements.some((m) => postsOnLedger(m.before, m.after))) return false;
    const expected = new Map(setups.map((s) => [s.locked.id, s.locked.version]));
    await this.#repo.writeChangesGuarded(planned.write, { expectedVersions: expected, guard, alongside: [this.#events.insertPart(planned.changes.map((c) => c.event))] });
    return true;
  }

  /** Setup's changes, worked out in memory: what to write, and each leg movement the ledger may need. */
  #planSetups(setups: SetupChange[]) {
    const changes: PlannedChange[] = [];
    const movements: Array<{ transfer: TransferRow; before: LegRow; after: LegRow }> = [];
    const finalTransfers = new Map<string, TransferRow>();
    const finalLegs = new Map<string, LegRow>();
    for (const setup of setups) {
      let transfer = setup.locked;
      const legs = setup.legs.slice();
      const leg = setup.handed && legs.find((l) => l.id === setup.handed!.legId);
      if (leg && setup.handed) {
        const change = legChange(transfer, leg, setup.handed.change);
        movements.push({ transfer, before: leg, after: change.leg! });
        changes.push(change);
        transfer = change.transfer;
        legs[legs.indexOf(leg)] = change.leg!;
        finalLegs.set(leg.id, change.leg!);
      }
      const refusal = transfer.status === 'PENDING_SETUP' ? refuseMove(transfer.status, 'READY_TO_FUND', transfer.funds_received_at !== null) : `transfer ${transfer.id} is ${transfer.status}, not PENDING_SETUP`;
      if (refusal) throw new ApiError(409, 'invalid_transition', refusal);
      const now = new Date();
      const ready = statusChange(transfer, movePatch(transfer, 'READY_TO_FUND', null, now), legs, now);
      changes.push(ready);
      finalTransfers.set(transfer.id, ready.transfer);
    }
    return {
      changes,
      movements,
      write: { items: changes.map((c) => ({ ...c.item, occurred_at: c.at })), legs: [...finalLegs.values()], transfers: [...finalTransfers.values()] },
    };
  }

  /**
   * The one leg function: records a leg's new status or stage (validated against the leg moves),
   * posts the ledger for what the leg moved, appends a LEG timeline item, raises the transfer's
   * version and records transfer.leg_status_changed. Needs the transfer row locked by this
   * transaction; returns both updated rows.
   */
  async changeLeg(trx: Transaction<any>, transfer: TransferRow, leg: LegRow, change: LegChange): Promise<{ transfer: TransferRow; leg: LegRow }> {
    const planned = legChange(transfer, leg, change);
    const updated = planned.leg!;
    await this.#postLegMovement(trx, transfer, leg, updated);
    const { version, updated_at, api_view } = planned.transfer;
    const bumped = await this.#repo.updateWithTimeline(trx, transfer.id, { version, updated_at, api_view }, planned.item, planned.at, { id: leg.id, patch: planned.legPatch! });
    await this.#events.record(trx, planned.event);
    return { transfer: bumped, leg: updated };
  }

  /**
   * The ledger side of a leg change. Quoted amounts are posted: the quote is what the customer
   * was promised, and the leg's actual amounts are recorded on the leg beside them.
   */
  async #postLegMovement(trx: Transaction<any>, transfer: TransferRow, before: LegRow, after: LegRow): Promise<void> {
    const fee = toMinor(after.quoted_fee, after.from_asset);
    const inMinor = toMinor(after.quoted_amount_in, after.from_asset);
    const outMinor = toMinor(after.quoted_amount_out, after.to_asset);
    const base = { organizationId: transfer.organization_id, transferId: transfer.id };
    const key = (kind: string) => `${transfer.id}:${kind}:${after.position}`;
    const { HELD, FX, FEES, TRANSIT, BENEFICIARY } = {
      HELD: ACCOUNTS.CUSTOMER_FUNDS_HELD,
      FX: ACCOUNTS.FX_CLEARING,
      FEES: ACCOUNTS.FEE_REVENUE,
      TRANSIT: ACCOUNTS.PAYOUT_IN_TRANSIT,
      BENEFICIARY: ACCOUNTS.BENEFICIARY_EXTERNAL,
    };
    const completedNow = after.status === 'COMPLETED' && before.status !== 'COMPLETED';
    if (after.kind === 'COLLECTION' && completedNow) {
      await this.#ledger.post(trx, { ...base, key: key('FEE'), kind: 'FEE', description: `Collection fee, leg ${after.position}`, postings: move(HELD, FEES, after.from_asset, fee) });
    } else if (after.kind === 'CONVERSION' && completedNow) {
      const postings: Posting[] = [
        { account: HELD, currency: after.from_asset, amount: -inMinor },
        { account: FEES, currency: after.from_asset, amount: fee },
        { account: FX, currency: after.from_asset, amount: inMinor - fee },
        { account: FX, currency: after.to_asset, amount: -outMinor },
        { account: HELD, currency: after.to_asset, amount: outMinor },
      ];
      await this.#ledger.post(trx, { ...base, key: key('CONVERSION'), kind: 'CONVERSION', description: `Conversion ${after.from_asset}→${after.to_asset}, leg ${after.position}`, postings });
    } else if (after.kind === 'PAYOUT') {
      // A provider may report a payout settled without ever reporting it in flight: it was still
      // handed to the rail first, so it passes through transit in the same transaction.
      if (before.status === 'PENDING' && (after.status === 'PROCESSING' || after.status === 'COMPLETED')) {
        await this.#ledger.post(trx, { ...base, key: key('PAYOUT_SENT'), kind: 'PAYOUT_SENT', description: `Payout handed to the rail, leg ${after.position}`, postings: move(HELD, TRANSIT, after.from_asset, inMinor) });
      }
      if (completedNow) {
        const postings: Posting[] = [
          { account: TRANSIT, currency: after.from_asset, amount: -inMinor },
          { account: FEES, currency: after.from_asset, amount: fee },
          { account: BENEFICIARY, currency: after.to_asset, amount: outMinor },
        ];
        await this.#ledger.post(trx, { ...base, key: key('PAYOUT_SETTLED'), kind: 'PAYOUT_SETTLED', description: `Payout delivered, leg ${after.position}`, postings });
      } else if ((after.status === 'FAILED' || after.status === 'RETURNED' || after.status === 'CANCELED') && before.status === 'PROCESSING') {
        await this.#ledger.post(trx, {
          ...base,
          key: key('PAYOUT_RETURNED'),
          kind: 'PAYOUT_RETURNED',
          description: `Payout ${after.status.toLowerCase()}, funds back from the rail, leg ${after.position}`,
          postings: move(TRANSIT, HELD, after.from_asset, inMinor),
        });
      }
    }
  }

  /**
   * A transfer that ends without delivering gives everything back: fees are reversed and what is
   * held for it (or still in transit) returns to the customer, per currency.
   */
  async #giveBack(trx: Transaction<any>, transfer: TransferRow, kind: 'REFUND' | 'RETURN_TO_CUSTOMER'): Promise<void> {
    const base = { organizationId: transfer.organization_id, transferId: transfer.id };
    let balances = await this.#ledger.transferBalances(transfer.id, trx);
    const feeReversal = balances.filter((b) => b.account === ACCOUNTS.FEE_REVENUE).flatMap((b) => move(ACCOUNTS.FEE_REVENUE, ACCOUNTS.CUSTOMER_FUNDS_HELD, b.currency, b.balance));
    await this.#ledger.post(trx, { ...base, key: `${transfer.id}:FEE_REVERSAL`, kind: 'FEE_REVERSAL', description: 'Fees reversed: the transfer did not deliver', postings: feeReversal });
    balances = await this.#ledger.transferBalances(transfer.id, trx);
    const back = balances
      .filter((b) => b.account === ACCOUNTS.CUSTOMER_FUNDS_HELD || b.account === ACCOUNTS.PAYOUT_IN_TRANSIT)
      .flatMap((b) => move(b.account, ACCOUNTS.CUSTOMER_EXTERNAL, b.currency, b.balance));
    await this.#ledger.post(trx, {
      ...base,
      key: `${transfer.id}:${kind}`,
      kind,
      description: kind === 'REFUND' ? 'Refund to the customer' : 'Funds returned to the customer',
      postings: back,
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Customer actions
  // ---------------------------------------------------------------------------------------------

  /** POST /v1/transfers/{id}/cancel: allowed until the funds are received (409 otherwise). */
  async cancel(organizationId: string, id: string, actor: Actor): Promise<TransferBody> {
    if (!isUuid(id)) throw notFound('Transfer');
    await this.#db.transaction().execute(async (trx) => {
      const locked = await this.#repo.lock(trx, id, organizationId);
      if (!locked) throw notFound('Transfer');
      if (locked.funds_received_at || !CANCELABLE.includes(locked.status)) {
        throw new ApiError(
          409,
          'transfer_not_cancelable',
          locked.funds_received_at ? 'The transfer\'s funds have been received; it can no longer be canceled' : `The transfer is ${locked.status}; it cannot be canceled`,
        );
      }
      await this.transitionLocked(trx, locked, { transferId: id, to: 'CANCELED', reason: 'canceled_by_customer', actor });
    });
    return this.body(organizationId, id);
  }
}

const quoteOptionUsed = () => new ApiError(409, 'quote_option_used', 'This quote option has already been used for a transfer; request a new quote');
const quoteExpired = () => new ApiError(422, 'quote_expired', 'The quote option has expired; request a new quote');
const destinationMismatch = (message: string) => new ApiError(422, 'destination_mismatch', message);

// ---- Mapping to the API ----

function toLeg(l: LegRow): Transfer['legs'][number] {
  return {
    position: l.position,
    kind: l.kind,
    provider: l.provider_name,
    providerReference: l.provider_reference,
    status: l.status,
    progressStage: l.progress_stage,
    fromAsset: l.from_asset,
    toAsset: l.to_asset,
    quotedAmountIn: normalize(l.quoted_amount_in, l.from_asset),
    quotedAmountOut: normalize(l.quoted_amount_out, l.to_asset),
    actualAmountIn: l.actual_amount_in === null ? null : normalize(l.actual_amount_in, l.from_asset),
    actualAmountOut: l.actual_amount_out === null ? null : normalize(l.actual_amount_out, l.to_asset),
    statusReason: l.status_reason,
    updatedAt: iso(l.updated_at),
  };
}

function toTimelineItem(e: Pick<TimelineRow, 'kind' | 'from_status' | 'to_status' | 'blocking_party' | 'reason' | 'leg_position' | 'leg_status' | 'progress_stage' | 'version' | 'occurred_at'>): Transfer['timeline'][number] {
  return {
    type: e.kind,
    status: e.to_status,
    previousStatus: e.from_status,
    blockingParty: e.blocking_party,
    reason: e.reason,
    leg: e.kind === 'LEG' && e.leg_position !== null && e.leg_status !== null ? { position: e.leg_position, status: e.leg_status } : null,
    progressStage: e.progress_stage,
    version: e.version,
    occurredAt: iso(e.occurred_at),
  };
}

/** The stored view as listed: lists leave the timeline out. */
function withoutTimeline(view: Transfer): TransferSummary {
  const { timeline: _timeline, ...summary } = view;
  return summary;
}

function toSummary(row: TransferDetailRow): TransferSummary {
  const nullable = (v: string | null, asset: string) => (v === null ? null : normalize(v, asset));
  return {
    id: row.id,
    status: row.status,
    blockingParty: row.blocking_party,
    statusReason: row.status_reason,
    version: row.version,
    entityId: row.entity_id,
    quoteId: row.quote_id,
    quoteOptionId: row.quote_option_id,
    clientReference: row.client_reference,
    paymentReferences: (row.payment_references as TransferSummary['paymentReferences']) ?? null,
    from: row.from_rail,
    to: row.to_rail,
    sourceAsset: row.source_asset,
    destinationAsset: row.destination_asset,
    quoted: {
      sourceAmount: normalize(row.quoted_source_amount, row.source_asset),
      destinationAmount: normalize(row.quoted_destination_amount, row.destination_asset),
      feeTotal: normalize(row.quoted_fee_total, row.fee_currency),
      feeCurrency: row.fee_currency,
      rate: row.quoted_rate,
    },
    actual: {
      sourceAmount: nullable(row.actual_source_amount, row.source_asset),
      destinationAmount: nullable(row.actual_destination_amount, row.destination_asset),
      feeTotal: nullable(row.actual_fee_total, row.fee_currency),
    },
    destination: {
      type: row.destination_type,
      id: row.destination_id,
      version: row.destination_version,
      relationship: row.destination_relationship,
      snapshot: row.destination_snapshot,
    },
    legs: row.legs.map(toLeg),
    fundsReceivedAt: isoOrNull(row.funds_received_at),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

/** A change worked out in memory: the rows as it leaves them, its timeline item and its event. */
/** A setup as completeSetups() takes it: the transfer as locked (or as created), its legs, and the leg its provider took. */
export interface SetupChange {
  locked: TransferRow;
  legs: LegRow[];
  handed: { legId: string; change: LegChange } | null;
}

/** Whether #postLegMovement posts anything for this leg movement. */
function postsOnLedger(before: LegRow, after: LegRow): boolean {
  const completedNow = after.status === 'COMPLETED' && before.status !== 'COMPLETED';
  if (after.kind === 'PAYOUT') return after.status !== before.status;
  return completedNow;
}

interface PlannedChange {
  transfer: TransferRow;
  item: NewTimelineRow;
  at: Date;
  event: NewEvent;
  /** A leg change's leg as it leaves it, and what it writes of it. */
  leg?: LegRow;
  legPatch?: LegPatch;
}

type MovePatch = Partial<TransferRow> & Pick<TransferRow, 'status' | 'blocking_party' | 'status_reason' | 'version' | 'updated_at'>;

/** What every status move writes; a move with consequences (funds, fees, review) adds to it. */
function movePatch(transfer: TransferRow, to: TransferStatus, reason: string | null, now: Date): MovePatch {
  return { status: to, blocking_party: blockingPartyOf(to), status_reason: reason, version: transfer.version + 1, updated_at: now };
}

/** A status move, as transitionLocked() records it once its consequences are in `patch`. */
function statusChange(transfer: TransferRow, patch: MovePatch, legs: LegRow[], at: Date): PlannedChange {
  const item: NewTimelineRow = {
    id: newId(),
    transfer_id: transfer.id,
    organization_id: transfer.organization_id,
    kind: 'STATUS',
    from_status: transfer.status,
    to_status: patch.status,
    blocking_party: patch.blocking_party,
    reason: patch.status_reason,
    leg_position: null,
    leg_status: null,
    progress_stage: currentStage(legs),
    version: patch.version,
  };
  const moved = { ...transfer, ...patch };
  return {
    transfer: { ...moved, api_view: nextView(moved, null, item, at) },
    item,
    at,
    event: {
      id: item.id,
      occurredAt: at,
      organizationId: transfer.organization_id,
      type: 'transfer.status_changed',
      data: { transferId: transfer.id, status: patch.status, previousStatus: transfer.status, blockingParty: patch.blocking_party, version: patch.version },
    },
  };
}

/** A leg's new status or stage, validated against the leg moves (see changeLeg()). */
function legChange(transfer: TransferRow, leg: LegRow, change: LegChange): PlannedChange {
  if (!LEG_MOVES[leg.status].includes(change.status) && !(leg.status === change.status && leg.progress_stage !== change.progressStage && change.status === 'PROCESSING')) {
    throw new ApiError(409, 'invalid_transition', `Leg ${leg.position} cannot move from ${leg.status} to ${change.status}`);
  }
  if (leg.status === change.status && leg.progress_stage === change.progressStage) throw new Error(`leg ${leg.position}: nothing changed`);
  const now = new Date();
  const legPatch: LegPatch = {
    status: change.status,
    progress_stage: change.progressStage,
    ...(change.providerReference !== undefined ? { provider_reference: change.providerReference } : {}),
    ...(change.actualAmountIn !== undefined ? { actual_amount_in: normalize(change.actualAmountIn, leg.from_asset) } : {}),
    ...(change.actualAmountOut !== undefined ? { actual_amount_out: normalize(change.actualAmountOut, leg.to_asset) } : {}),
    ...(change.reason !== undefined ? { status_reason: change.reason } : {}),
    updated_at: now,
  };
  const updated: LegRow = { ...leg, ...legPatch };
  const item: NewTimelineRow = {
    id: newId(),
    transfer_id: transfer.id,
    organization_id: transfer.organization_id,
    kind: 'LEG',
    from_status: transfer.status,
    to_status: transfer.status,
    blocking_party: transfer.blocking_party,
    reason: change.reason ?? null,
    leg_position: leg.position,
    leg_status: change.status,
    progress_stage: change.progressStage,
    version: transfer.version + 1,
  };
  const bumped = { ...transfer, version: item.version, updated_at: now };
  return {
    transfer: { ...bumped, api_view: nextView(bumped, updated, item, now) },
    item,
    at: now,
    leg: updated,
    legPatch,
    event: {
      id: item.id,
      occurredAt: now,
      organizationId: transfer.organization_id,
      type: 'transfer.leg_status_changed',
      data: {
        transferId: transfer.id,
        status: transfer.status,
        previousStatus: transfer.status,
        blockingParty: transfer.blocking_party,
        version: item.version,
        leg: toLeg(updated),
      },
    },
  };
}

/**
 * The stored view after one change: the transfer's own fields from its updated row, the changed
 * leg replaced, the new timeline item appended. Null when the row had no view (it is then built
 * from the tables on read).
 */
function nextView(row: TransferRow, changedLeg: LegRow | null, item: NewTimelineRow, at: Date): string | null {
  if (!row.api_view) return null;
  const previous = parseView(row.api_view);
  const { legs: _legs, timeline: _timeline, ...top } = toTransfer({ ...row, legs: [], timeline: [] }, null);
  const legs = changedLeg ? previous.legs.map((l) => (l.position === changedLeg.position ? toLeg(changedLeg) : l)) : previous.legs;
  const view: Transfer = { ...top, legs, timeline: [...previous.timeline, toTimelineItem({ ...item, occurred_at: at })] };
  const text = JSON.stringify(view);
  lastView = { text, view };
  return text;
}

/**
 * The view last made by nextView, kept so that the next change of the same transfer (setup
 * records a leg change, then a status change) does not parse again the text just written.
 * Found by the identity of the string, which that next change carries on its row.
 */
let lastView: { text: string; view: Transfer } | null = null;

function parseView(text: string): Transfer {
  return lastView && lastView.text === text ? lastView.view : (JSON.parse(text) as Transfer);
}

export function toTransfer(row: TransferDetailRow, instructions: object | null): Transfer {
  const { legs, fundsReceivedAt, createdAt, updatedAt, ...rest } = toSummary(row);
  return {
    ...rest,
    legs,
    timeline: row.timeline.map(toTimelineItem),
    ...(instructions ? { awaitingFundsInstructions: instructions as Record<string, unknown> } : {}),
    fundsReceivedAt,
    createdAt,
    updatedAt,
  };
}

export type { Actor, FundableTransfer };
