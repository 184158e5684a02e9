// The execution engine: moves transfers through setup and execution one step at a time on the
// durable job queue. A step reads the committed state, talks to the provider outside any
// transaction, then records what the provider said in one transaction that also enqueues the
// next step. A crash anywhere loses nothing: the next step (re-sent at start by sweep()) reads
// the state again; executeLeg is idempotent per leg id, and a provider state the engine has not
// recorded yet is caught up before the simulator is asked to move again.
import type { Kysely, Transaction } from 'kysely';
import type { Environment } from '../platform/config.ts';
import { ApiError, notFound, validationError } from '../platform/http/errors.ts';
import { MoneyError, fromMinor, parseClientAmount, toMinor } from '../platform/money.ts';
import type { Logger } from '../platform/logger.ts';
import { PROGRESS_STAGES, ProviderError, isSimulated } from '../providers/adapter.ts';
import type { LegExecutionRequest, LegHandOff, LegStatusReport, ProviderAdapter } from '../providers/adapter.ts';
import type { LegRow, TransferRow } from './repository.ts';
import type { Transfer } from './schemas.ts';
import { STEP_JOB } from './service.ts';
import type { Actor, LegChange, TransferBody, TransferService } from './service.ts';
import { isLegTerminal, legProgress } from './state-machine.ts';
import type { TransferStatus } from './state-machine.ts';
import { isUuid } from '../platform/ids.ts';
import { Batcher } from '../platform/batch.ts';
import { isGuardRefusal } from '../platform/db/guard.ts';

export interface ProviderLookup {
  get(id: string): ProviderAdapter | undefined;
}

export interface TransferEngineOptions {
  db: Kysely<any>;
  env: Environment;
  transfers: TransferService;
  providers: ProviderLookup;
  log: Logger;
}

export type StepResult = 'moved' | 'waiting' | 'idle';

/** A leg the provider has taken: its reference, and its state as the provider answered. */
interface HandedLeg {
  legId: string;
  reference: string;
  report: LegStatusReport;
}

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** The change a hand-off makes to its leg: the provider's state, if the leg is still PENDING. */
function handedChange(legs: LegRow[], started: HandedLeg | null) {
  const leg = started && legs.find((l) => l.id === started.legId);
  return leg && started && leg.status === 'PENDING'
    ? { legId: leg.id, change: { status: started.report.status, progressStage: started.report.progressStage, providerReference: started.reference } }
    : null;
}

/** Transfers one setup batch prepares together (one read, one transaction, one commit). */
const SETUP_BATCH = 25;
/** Setup batches the setup job has under way at once. */
const SETUP_PAGES_AT_ONCE = 2;

/** How long the setups of transfers just created are gathered before they are made together. */
const CREATED_SETUP_WINDOW_MS = 50;

/** Seconds between simulated steps at CORRIDOR_SANDBOX_SPEED=1. */
export const BASE_STEP_SECONDS = 5;

export class TransferEngine {
  readonly #db: Kysely<any>;
  readonly #env: Environment;
  readonly #transfers: TransferService;
  readonly #providers: ProviderLookup;
  readonly #log: Logger;
  // One step at a time per transfer in this process, so a queued step and a sandbox /advance
  // never ask the same simulated leg to move twice for one recorded change.
  readonly #running = new Map<string, Promise<unknown>>();

  constructor(options: TransferEngineOptions) {
    this.#db = options.db;
    this.#env = options.env;
    this.#transfers = options.transfers;
    this.#providers = options.providers;
    this.#log = options.log;
  }

  get #repo() {
    return this.#transfers.repository;
  }

  #serial<T>(transferId: string, work: () => Promise<T>): Promise<T> {
    return this.#serialAll([transferId], work);
  }

  /** #serial for several transfers at once: the work starts when none of them has a step running. */
  async #serialAll<T>(transferIds: string[], work: () => Promise<T>): Promise<T> {
    const priors = transferIds.map((id) => (this.#running.get(id) ?? Promise.resolve()).catch(() => {}));
    const next = Promise.all(priors).then(work);
    for (const id of transferIds) this.#running.set(id, next);
    try {
      return await next;
    } finally {
      for (const id of transferIds) if (this.#running.get(id) === next) this.#running.delete(id);
    }
  }

  /** The transfers.step job: one step of setup or execution, whatever the transfer needs now. */
  async step(transferId: string): Promise<StepResult> {
    return this.#serial(transferId, () => this.#step(transferId));
  }

  /**
   * A batch of transfers.step jobs, as the queue hands them over. The setups among them share
   * one read, one transaction and one commit (alone, a setup was ten round trips, four of them
   * its own read, begin, lock and commit); every other step runs as step() runs it. Answers,
   * in order, null for each transfer whose step ran and the error for each whose step failed
   * (its job is retried).
   */
  async stepAll(transferIds: string[]): Promise<Array<Error | null>> {
    const ids = [...new Set(transferIds)];
    const failed = new Map<string, Error>();
    await this.#serialAll(ids, async () => {
      const found = new Map((await this.#repo.findManyWithLegs(ids)).map((row) => [row.id, row]));
      const setups = [...found.values()].filter((row) => row.status === 'PENDING_SETUP');
      const others = ids.filter((id) => found.get(id)?.status !== 'PENDING_SETUP');
      await Promise.all([
        this.#prepareAll(setups, failed),
        ...others.map((id) => this.#step(id, found.get(id) ?? null).catch((err: unknown) => void failed.set(id, asError(err)))),
      ]);
    });
    return transferIds.map((id) => failed.get(id) ?? null);
  }

  /** One step; `read` is the transfer as a batch already read it (null: it does not exist). */
  async #step(transferId: string, read?: (TransferRow & { legs: LegRow[] }) | null): Promise<StepResult> {
    const found = read === undefined ? await this.#repo.findWithLegs(transferId) : read;
    if (!found) return 'idle';
    const { legs, ...transfer } = found;
    if (transfer.status === 'PENDING_SETUP') return this.#prepare(transfer, legs);
    if (transfer.status !== 'IN_PROGRESS') return 'idle';

    if (transfer.sandbox_outcome === 'REVIEW' && !transfer.reviewed_at) {
      await this.#inTransaction(transfer.id, 'IN_PROGRESS', async (trx, locked) => {
        if (locked.reviewed_at) return;
        await this.#transfers.transitionLocked(trx, locked, { transferId: locked.id, to: 'IN_REVIEW', reason: 'compliance_review', actor: { system: 'sandbox' } });
      });
      return 'moved';
    }

    const leg = legs.find((l) => l.status !== 'COMPLETED');
    if (!leg) {
      await this.#inTransaction(transfer.id, 'IN_PROGRESS', (trx, locked) => this.#transfers.transitionLocked(trx, locked, { transferId: locked.id, to: 'COMPLETED', reason: null, actor: { system: 'engine' } }));
      return 'moved';
    }
    // A leg that ended badly moves the transfer in the same transaction; reaching here means
    // that transaction committed the leg but the transfer is still IN_PROGRESS, which cannot be.
    if (isLegTerminal(leg.status)) throw new Error(`transfer ${transfer.id}: leg ${leg.position} is ${leg.status} but the transfer is IN_PROGRESS`);

    const provider = this.#provider(leg.provider_id);
    if (!leg.provider_reference) {
      const amount = handedAmount(leg);
      const { providerReference, report } = await provider.executeLeg({
        legId: leg.id,
        transferId: transfer.id,
        kind: leg.kind,
        fromAsset: leg.from_asset,
        toAsset: leg.to_asset,
        amount,
        ...(leg.rail ? { rail: leg.rail } : {}),
        ...(leg.kind === 'PAYOUT' ? { destination: transfer.destination_snapshot } : {}),
        ...(leg.kind === 'CONVERSION' ? { rate: leg.quoted_rate } : {}),
        ...(transfer.sandbox_outcome ? { sandboxOutcome: legOutcome(transfer, leg, legs) } : {}),
      });
      await this.#record(transfer, legs, leg.id, report, { providerReference, actualAmountIn: amount });
      return 'moved';
    }

    let report = await provider.legStatus(leg.provider_reference);
    if (!isAhead(leg, report)) {
      if (!isSimulated(provider)) {
        // A real provider moves on its own: look again later.
        await this.#db.transaction().execute((trx) => this.#transfers.scheduleStep(trx, transfer.id));
        return 'waiting';
      }
      report = await provider.advance(leg.provider_reference);
    }
    await this.#record(transfer, legs, leg.id, report, {});
    return 'moved';
  }

  /** Setup: hands the collection leg to its provider, then the transfer is READY_TO_FUND. */
  async #prepare(transfer: TransferRow, legs: LegRow[]): Promise<StepResult> {
    await this.#setUpAlone(transfer, legs, await this.#handOff(transfer, legs));
    return 'moved';
  }

  /** Setup's change for one handed-off transfer, in its own transaction. */
  #setUpAlone(transfer: TransferRow, legs: LegRow[], started: HandedLeg | null): Promise<void> {
    return this.#inTransaction(transfer.id, 'PENDING_SETUP', async (trx, locked) => {
      await this.#transfers.completeSetups(trx, [await this.#setupOf(trx, locked, transfer.version, legs, started)]);
    });
  }

  /**
   * Setup of several transfers: the hand-offs, then one transaction for all. Should that
   * transaction fail, each transfer gets its own, so one cannot hold the others back.
   */
  async #prepareAll(setups: Array<TransferRow & { legs: LegRow[] }>, failed: Map<string, Error>): Promise<void> {
    await this.#completeHanded(await this.#handedOff(setups, failed), failed);
  }

  /** The transfers whose collection leg a provider took (or that have none to hand); the others fail. */
  async #handedOff(setups: Array<TransferRow & { legs: LegRow[] }>, failed: Map<string, Error>): Promise<Array<{ transfer: TransferRow & { legs: LegRow[] }; started: HandedLeg | null }>> {
    const handed = await this.#handOffAll(setups);
    return setups.flatMap((transfer, i) => {
      const started = handed[i]!;
      if (started instanceof Error) {
        failed.set(transfer.id, started);
        return [];
      }
      return [{ transfer, started }];
    });
  }

  /**
   * Setup of transfers this process has just created, from the rows it wrote: no job, no read,
   * and, after the hand-offs, one guarded statement for all of them (completeCreatedSetups).
   * Transfers changed meanwhile, or whose setup must post to the ledger or run subscribers, are
   * set up in a transaction as any other. Callers arriving while a batch is under way join the
   * next one. Fails when a transfer could not be prepared; the setup job then takes it.
   */
  async setUpCreated(created: Array<TransferRow & { legs: LegRow[] }>): Promise<void> {
    const failed = await this.#createdSetups.submit(created);
    if (failed) throw failed;
  }

  // Answers each caller the error of its own transfers that could not be prepared, or null: one
  // refused hand-off does not make the others of the batch run again.
  readonly #createdSetups = new Batcher<Array<TransferRow & { legs: LegRow[] }>, AggregateError | null>(
    (groups) => this.#setUpCreatedGroups(groups),
    // Nobody waits on a setup: gathered over a short window, the setups of several creation
    // batches share one hand-off and one statement. Measured with the pair load of `npm run bench
    // transfers` (2026-11-26, three alternating runs each): 773 creations a second without a window,
    // 829 with 50 ms; a creation's CPU fell from 2.01 to 1.82 ms of the machine's.
    { windowMs: CREATED_SETUP_WINDOW_MS, maxSize: 1000 },
  );

  async #setUpCreatedGroups(groups: Array<Array<TransferRow & { legs: LegRow[] }>>): Promise<Array<AggregateError | null>> {
    const created = groups.flat();
    const failed = new Map<string, Error>();
    await this.#serialAll(
      created.map((t) => t.id),
      async () => {
        const ready = await this.#handedOff(created, failed);
        const changes = ready.map(({ transfer, started }) => {
          const { legs, ...row } = transfer;
          return { locked: row, legs: legs.slice(), handed: handedChange(legs, started) };
        });
        try {
          if (await this.#transfers.completeCreatedSetups(changes)) return;
        } catch (err) {
          if (!isGuardRefusal(err)) throw err;
        }
        await this.#completeHanded(ready, failed);
      },
    );
    return groups.map((group) => {
      const errors = group.flatMap((t) => failed.get(t.id) ?? []);
      return errors.length ? new AggregateError(errors, `${errors.length} created transfer(s) could not be prepared: ${errors[0]!.message}`) : null;
    });
  }

  /** The handed-off setups written in one transaction (each in its own when that one fails). */
  async #completeHanded(ready: Array<{ transfer: TransferRow & { legs: LegRow[] }; started: HandedLeg | null }>, failed: Map<string, Error>): Promise<void> {
    const alone = (h: (typeof ready)[number]) => this.#setUpAlone(h.transfer, h.transfer.legs, h.started).catch((err: unknown) => void failed.set(h.transfer.id, asError(err)));
    if (ready.length < 2) {
      await Promise.all(ready.map(alone));
      return;
    }
    try {
      await this.#db.transaction().execute(async (trx) => {
        // Locked by their versions alone: a row still at the version read before the hand-offs is
        // the row read then (every change raises the version), so it is not read again.
        const locked = new Map((await this.#repo.lockVersions(trx, ready.map((h) => h.transfer.id))).map((row) => [row.id, row]));
        const setups = [];
        for (const { transfer, started } of ready) {
          const now = locked.get(transfer.id);
          if (now?.status !== 'PENDING_SETUP') continue;
          const { legs, ...read } = transfer;
          const row = now.version === read.version ? read : await this.#repo.lock(trx, transfer.id);
          if (row?.status === 'PENDING_SETUP') setups.push(await this.#setupOf(trx, row, transfer.version, legs, started));
        }
        await this.#transfers.completeSetups(trx, setups);
      });
    } catch (err) {
      this.#log.warn({ err, transfers: ready.length }, 'batched setup failed; preparing each transfer on its own');
      for (const h of ready) await alone(h);
    }
  }

  /** The collection leg handed to its provider (outside any transaction); null when there is none to hand. */
  async #handOff(transfer: TransferRow, legs: LegRow[]): Promise<HandedLeg | null> {
    const [handed] = await this.#handOffAll([{ ...transfer, legs }]);
    if (handed instanceof Error) throw handed;
    return handed!;
  }

  /**
   * #handOff for several transfers: each provider gets its legs in one call when it takes a
   * batch (executeLegs), else one call per leg, all under way together. Answers, in order, each
   * transfer's handed leg, null, or the error that refused it.
   */
  async #handOffAll(transfers: Array<TransferRow & { legs: LegRow[] }>): Promise<Array<HandedLeg | null | Error>> {
    const answers: Array<HandedLeg | null | Error> = transfers.map(() => null);
    const byProvider = new Map<string, Array<{ index: number; request: LegExecutionRequest }>>();
    transfers.forEach((transfer, index) => {
      const collection = transfer.legs.find((l) => l.kind === 'COLLECTION' && l.status === 'PENDING');
      if (!collection) return;
      const request: LegExecutionRequest = {
        legId: collection.id,
        transferId: transfer.id,
        kind: 'COLLECTION',
        fromAsset: collection.from_asset,
        toAsset: collection.to_asset,
        amount: collection.quoted_amount_in,
        ...(collection.rail ? { rail: collection.rail } : {}),
        ...(transfer.sandbox_outcome ? { sandboxOutcome: 'SUCCEED' as const } : {}),
      };
      let group = byProvider.get(collection.provider_id);
      if (!group) byProvider.set(collection.provider_id, (group = []));
      group.push({ index, request });
    });
    const settle = (index: number, handOff: LegHandOff | Error, legId: string) => {
      answers[index] = handOff instanceof Error ? handOff : { legId, reference: handOff.providerReference, report: handOff.report };
    };
    await Promise.all(
      [...byProvider].map(async ([providerId, group]) => {
        try {
          const provider = this.#provider(providerId);
          if (provider.executeLegs) {
            const handOffs = await provider.executeLegs(group.map((g) => g.request));
            group.forEach((g, i) => settle(g.index, handOffs[i] ?? new Error(`${providerId} did not answer for leg ${g.request.legId}`), g.request.legId));
          } else {
            await Promise.all(group.map(async (g) => settle(g.index, await provider.executeLeg(g.request).catch(asError), g.request.legId)));
          }
        } catch (err) {
          for (const g of group) answers[g.index] = asError(err);
        }
      }),
    );
    return answers;
  }

  /**
   * Setup's change for a locked transfer, as TransferService.completeSetups takes it: the state
   * the provider gave the handed leg, if the leg is still PENDING, then READY_TO_FUND.
   */
  async #setupOf(trx: Transaction<any>, locked: TransferRow, readVersion: number, readLegs: LegRow[], started: HandedLeg | null) {
    const legs = await this.#legsUnder(trx, locked, readVersion, readLegs);
    return { locked, legs, handed: handedChange(legs, started) };
  }

  /**
   * Records a provider's report on a leg, and what it means for the transfer, in one
   * transaction: a failed conversion refunds, a failed payout fails, a returned payout returns,
   * the last leg completing completes the transfer; otherwise the next step is queued.
   */
  async #record(read: TransferRow, readLegs: LegRow[], legId: string, report: LegStatusReport, extra: Partial<LegChange>): Promise<void> {
    await this.#inTransaction(read.id, 'IN_PROGRESS', async (trx, locked) => {
      const legs = await this.#legsUnder(trx, locked, read.version, readLegs);
      const leg = legs.find((l) => l.id === legId)!;
      if (!isAhead(leg, report) && !(extra.providerReference && !leg.provider_reference)) return;
      const change: LegChange = { status: report.status, progressStage: report.progressStage, ...extra };
      if (report.status === 'COMPLETED') change.actualAmountOut = delivered(leg, report);
      if (report.reason !== undefined) change.reason = report.reason;
      const changed = await this.#transfers.changeLeg(trx, locked, leg, change);
      const transfer = changed.transfer;
      const outcome = consequence(transfer, leg, report.status, legs);
      if (outcome) {
        legs[legs.indexOf(leg)] = changed.leg;
        await this.#transfers.transitionLocked(trx, transfer, { transferId: transfer.id, to: outcome.to, reason: outcome.reason, actor: { system: 'engine' } }, legs);
      } else {
        await this.#transfers.scheduleStep(trx, transfer.id);
      }
    });
  }

  /**
   * The legs of a transfer this transaction has locked. Every change raises the version, so when
   * it is still the version the step read, the legs read with it are current: no second read.
   */
  async #legsUnder(trx: Transaction<any>, locked: TransferRow, readVersion: number, readLegs: LegRow[]): Promise<LegRow[]> {
    return locked.version === readVersion ? readLegs.slice() : this.#repo.legs(locked.id, trx);
  }

  /** Runs `work` on the locked transfer if it is still in `expected`; otherwise does nothing. */
  async #inTransaction(transferId: string, expected: TransferStatus, work: (trx: Transaction<any>, locked: TransferRow) => Promise<unknown>): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const locked = await this.#repo.lock(trx, transferId);
      if (!locked || locked.status !== expected) return;
      await work(trx, locked);
    });
  }

  #provider(id: string): ProviderAdapter {
    const provider = this.#providers.get(id);
    if (!provider) throw new Error(`provider ${id} is not configured in this environment`);
    return provider;
  }

  /**
   * The transfers.setup job: prepares every transfer waiting in PENDING_SETUP, oldest first, a
   * page at a time (each page as stepAll takes it: the hand-offs, then one transaction), with
   * SETUP_PAGES_AT_ONCE pages under way so one page's round trips overlap another's, until none
   * is left that this run has not tried. Transfers created meanwhile are taken too. Fails, so
   * that the queue runs it again later, when any transfer could not be prepared.
   */
  async setUpPending(): Promise<void> {
    const tried = new Set<string>();
    const failures: Error[] = [];
    let after: { updated_at: Date; id: string } | null = null;
    let reading: Promise<string[]> = Promise.resolve([]);
    // Pages are read one after the other, so that each starts where the last one ended.
    const nextPage = (): Promise<string[]> =>
      (reading = reading.then(async () => {
        const page = await this.#repo.pendingSetup(after, SETUP_BATCH);
        const fresh = page.filter((row) => !tried.has(row.id));
        for (const row of fresh) tried.add(row.id);
        if (fresh.length) after = page[page.length - 1]!;
        return fresh.map((row) => row.id);
      }));
    const worker = async () => {
      for (let ids = await nextPage(); ids.length; ids = await nextPage()) {
        for (const err of await this.stepAll(ids)) if (err) failures.push(err);
      }
    };
    await Promise.all(Array.from({ length: SETUP_PAGES_AT_ONCE }, worker));
    if (failures.length) throw new AggregateError(failures, `${failures.length} transfer(s) could not be prepared: ${failures[0]!.message}`);
  }

  /**
   * Queues what every transfer the engine owns needs (at start, and periodically for
   * stragglers): one setup job for those waiting in PENDING_SETUP, a step for each in progress.
   */
  async sweep(options: { idleForMs?: number } = {}): Promise<number> {
    const rows = await this.#repo.engineOwned(new Date(Date.now() - (options.idleForMs ?? 0)), 1000);
    for (const row of rows) if (row.status === 'IN_PROGRESS') await this.#transfers.scheduleSweepStep(row.id);
    if (rows.some((row) => row.status === 'PENDING_SETUP')) await this.#transfers.sendSetup();
    return rows.length;
  }

  // ---------------------------------------------------------------------------------------------
  // Sandbox and operations actions
  // ---------------------------------------------------------------------------------------------

  /**
   * POST /v1/sandbox/transfers/{id}/fund: the customer's funds arrive. The collection leg
   * completes, the funds are posted to the ledger and the transfer moves to IN_PROGRESS.
   */
  async fund(organizationId: string, transferId: string, amount?: string): Promise<TransferBody> {
    const transfer = await this.#owned(organizationId, transferId);
    if (transfer.status === 'PENDING_SETUP') await this.#stepNow(transferId);
    await this.#serial(transferId, async () => {
      const current = (await this.#repo.find(transferId))!;
      if (current.status !== 'READY_TO_FUND' && current.status !== 'AWAITING_FUNDS') {
        throw new ApiError(409, 'invalid_transition', `The transfer is ${current.status}; it cannot receive funds`);
      }
      const received = amount ?? current.quoted_source_amount;
      let exact: boolean;
      try {
        // The quote's rule: no more fraction digits than the asset has.
        exact = (amount === undefined ? toMinor(received, current.source_asset) : parseClientAmount(received, current.source_asset)) === toMinor(current.quoted_source_amount, current.source_asset);
      } catch (err) {
        if (err instanceof MoneyError) throw validationError([{ path: 'amount', message: err.message }]);
        throw err;
      }
      if (!exact) {
        throw new ApiError(422, 'funding_amount_mismatch', `The transfer must be funded with exactly ${current.quoted_source_amount} ${current.source_asset}`);
      }
      const legs = await this.#repo.legs(transferId);
      const collection = legs.find((l) => l.kind === 'COLLECTION' && !isLegTerminal(l.status));
      const reports = collection ? await this.#collect(collection) : [];
      await this.#db.transaction().execute(async (trx) => {
        let locked = await this.#repo.lock(trx, transferId);
        if (!locked || (locked.status !== 'READY_TO_FUND' && locked.status !== 'AWAITING_FUNDS')) {
          throw new ApiError(409, 'invalid_transition', `The transfer is ${locked?.status ?? 'missing'}; it cannot receive funds`);
        }
        const inTrx = await this.#repo.legs(transferId, trx);
        const index = collection ? inTrx.findIndex((l) => l.id === collection.id) : -1;
        for (const report of index < 0 ? [] : reports) {
          const leg = inTrx[index]!;
          if (!isAhead(leg, report)) continue;
          const change: LegChange = { status: report.status, progressStage: report.progressStage };
          if (!leg.actual_amount_in) change.actualAmountIn = received;
          if (report.status === 'COMPLETED') change.actualAmountOut = delivered(leg, report);
          const changed = await this.#transfers.changeLeg(trx, locked, leg, change);
          locked = changed.transfer;
          inTrx[index] = changed.leg;
        }
        const moved = await this.#transfers.transitionLocked(
          trx,
          locked,
          { transferId, to: 'IN_PROGRESS', reason: 'funds_received', fundsReceived: { amount: received }, actor: { system: 'sandbox' } },
          inTrx,
        );
        await this.#transfers.scheduleStep(trx, moved.id);
      });
    });
    return this.#transfers.body(organizationId, transferId);
  }

  /** Moves the simulated collection leg to COMPLETED; returns each report on the way. */
  async #collect(leg: LegRow): Promise<LegStatusReport[]> {
    const provider = this.#provider(leg.provider_id);
    if (!leg.provider_reference || !isSimulated(provider)) {
      // No simulator to ask (or setup never reached it): the stages are recorded as they are defined.
      return PROGRESS_STAGES.COLLECTION.slice(1).map((stage, i, all) => ({
        status: i === all.length - 1 ? ('COMPLETED' as const) : ('PROCESSING' as const),
        progressStage: stage,
        ...(i === all.length - 1 ? { amountOut: leg.quoted_amount_out } : {}),
      }));
    }
    const reports: LegStatusReport[] = [];
    let report = await provider.legStatus(leg.provider_reference);
    reports.push(report);
    for (let i = 0; i < 10 && !isLegTerminal(report.status); i++) {
      report = await provider.advance(leg.provider_reference);
      reports.push(report);
    }
    if (report.status !== 'COMPLETED') throw new ApiError(409, 'invalid_transition', `The collection could not complete (${report.status})`);
    return reports;
  }

  /** POST /v1/sandbox/transfers/{id}/advance: one step of the transfer's next leg, now. */
  async advance(organizationId: string, transferId: string): Promise<TransferBody> {
    const transfer = await this.#owned(organizationId, transferId);
    if (transfer.status !== 'PENDING_SETUP' && transfer.status !== 'IN_PROGRESS') {
      const hint =
        transfer.status === 'READY_TO_FUND' || transfer.status === 'AWAITING_FUNDS'
          ? 'fund it first (POST /v1/sandbox/transfers/{id}/fund)'
          : transfer.status === 'IN_REVIEW'
            ? 'operations staff must approve or reject it'
            : 'it has ended';
      throw new ApiError(409, 'invalid_transition', `Nothing to advance: the transfer is ${transfer.status}; ${hint}`);
    }
    await this.#stepNow(transferId);
    return this.#transfers.body(organizationId, transferId);
  }

  /**
   * A step a client asked for (sandbox fund and advance). A provider on the path that is DOWN
   * refuses new legs: that is 503 provider_unavailable, not an internal error. Nothing changed;
   * the transfer waits where it is (blockingParty PROVIDER) and moves on once the provider is back.
   */
  async #stepNow(transferId: string): Promise<void> {
    try {
      await this.step(transferId);
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'provider_unavailable') {
        throw new ApiError(503, 'provider_unavailable', `${err.message}; the transfer waits and moves on once the provider is back`);
      }
      throw err;
    }
  }

  /** Ops: approves a transfer in review; it resumes execution (or funding, before funds). */
  async approve(transferId: string, actor: Actor, reason?: string): Promise<Transfer & { organizationId: string }> {
    return this.#review(transferId, actor, (t) => (t.funds_received_at ? 'IN_PROGRESS' : 'READY_TO_FUND'), reason ?? 'approved_by_operations');
  }

  /** Ops: rejects a transfer in review; received funds are refunded, otherwise it fails. */
  async reject(transferId: string, actor: Actor, reason?: string): Promise<Transfer & { organizationId: string }> {
    return this.#review(transferId, actor, (t) => (t.funds_received_at ? 'REFUNDED' : 'FAILED'), reason ?? 'rejected_by_operations');
  }

  async #review(transferId: string, actor: Actor, target: (t: TransferRow) => TransferStatus, reason: string): Promise<Transfer & { organizationId: string }> {
    if (!isUuid(transferId)) throw notFound('Transfer');
    await this.#serial(transferId, () =>
      this.#db.transaction().execute(async (trx) => {
        const locked = await this.#repo.lock(trx, transferId);
        if (!locked) throw notFound('Transfer');
        if (locked.status !== 'IN_REVIEW') throw new ApiError(409, 'invalid_transition', `The transfer is ${locked.status}, not IN_REVIEW`);
        const moved = await this.#transfers.transitionLocked(trx, locked, { transferId, to: target(locked), reason, actor });
        if (moved.status === 'IN_PROGRESS') await this.#transfers.scheduleStep(trx, transferId);
      }),
    );
    return this.#transfers.getAny(transferId);
  }

  async #owned(organizationId: string, transferId: string): Promise<TransferRow> {
    const row = isUuid(transferId) ? await this.#repo.find(transferId) : undefined;
    if (!row || row.organization_id !== organizationId) throw notFound('Transfer');
    return row;
  }

  get env(): Environment {
    return this.#env;
  }

  get log(): Logger {
    return this.#log;
  }
}

export { STEP_JOB };

/** What the engine hands the provider: the customer's full amount to collect; otherwise the leg's input net of its fee. */
function handedAmount(leg: LegRow): string {
  if (leg.kind === 'COLLECTION') return leg.quoted_amount_in;
  return fromMinor(toMinor(leg.quoted_amount_in, leg.from_asset) - toMinor(leg.quoted_fee, leg.from_asset), leg.from_asset);
}

/**
 * What a completed leg passes on. A collection provider takes in the customer's gross amount and
 * the leg's fee comes off it; the others were handed the net amount and report what came out.
 */
function delivered(leg: LegRow, report: LegStatusReport): string {
  if (!report.amountOut) return leg.quoted_amount_out;
  if (leg.kind !== 'COLLECTION') return report.amountOut;
  return fromMinor(toMinor(report.amountOut, leg.to_asset) - toMinor(leg.quoted_fee, leg.from_asset), leg.to_asset);
}

/** Is the provider's report further along than what is recorded for the leg? */
function isAhead(leg: LegRow, report: LegStatusReport): boolean {
  return legProgress(leg.kind, report.status, report.progressStage) > legProgress(leg.kind, leg.status, leg.progress_stage);
}

/**
 * The sandbox outcome a simulated leg is told to play (DECISIONS.md §6): FAIL fails the payout,
 * RETURN has the payout returned, REFUND fails the (first) conversion; everything else succeeds.
 */
function legOutcome(transfer: TransferRow, leg: LegRow, legs: LegRow[]): 'SUCCEED' | 'FAIL' | 'RETURN' {
  switch (transfer.sandbox_outcome) {
    case 'FAIL':
      return leg.kind === 'PAYOUT' ? 'FAIL' : 'SUCCEED';
    case 'RETURN':
      return leg.kind === 'PAYOUT' ? 'RETURN' : 'SUCCEED';
    case 'REFUND': {
      // The first conversion fails; a path without one fails its first leg after collection.
      const target = legs.find((l) => l.kind === 'CONVERSION') ?? legs.find((l) => l.kind !== 'COLLECTION');
      return target?.id === leg.id ? 'FAIL' : 'SUCCEED';
    }
    default:
      return 'SUCCEED';
  }
}

/** What a leg's new status means for the transfer, if anything. */
function consequence(transfer: TransferRow, leg: LegRow, status: LegRow['status'], legs: LegRow[]): { to: TransferStatus; reason: string | null } | null {
  if (status === 'FAILED') {
    // Before any payout ran, a failure gives the source funds back: the transfer is refunded.
    if (leg.kind === 'CONVERSION') return { to: 'REFUNDED', reason: 'conversion_failed' };
    // The sandbox's refund scenario (.94) on a path with no conversion fails the payout instead,
    // and still has to end REFUNDED (DECISIONS.md §6): the payout was refused, nothing delivered.
    if (transfer.sandbox_outcome === 'REFUND') return { to: 'REFUNDED', reason: leg.kind === 'PAYOUT' ? 'payout_failed' : 'collection_failed' };
    return { to: 'FAILED', reason: leg.kind === 'PAYOUT' ? 'payout_failed' : 'collection_failed' };
  }
  if (status === 'RETURNED') return { to: 'RETURNED', reason: 'payout_returned' };
  if (status === 'COMPLETED' && legs.every((l) => l.id === leg.id || l.status === 'COMPLETED')) return { to: 'COMPLETED', reason: null };
  return null;
}
