// Webhook endpoints and at-least-once, signed delivery of events to them.
//
// How an event reaches an endpoint, and why nothing is lost when the process dies at any point:
//
// 1. Fan-out happens inside the transaction that records the event (EventService.subscribe):
//    one delivery row per enabled endpoint subscribed to the event type, and one job per delivery
//    on the durable queue, enqueued with that same transaction. The event, its deliveries and
//    their jobs therefore commit together or not at all: no cursor, no gap, no second writer.
// 2. A delivery job makes one HTTP attempt, then records it in one transaction: the attempt row,
//    the delivery's new state and, when it failed, the job of the next retry (startAfter = the
//    backoff). A job that dies before that transaction commits is run again by the queue once its
//    lease expires, which re-sends the same event under the same webhook-id (at least once).
// 3. Each job carries the step of the retry chain it belongs to; a job whose step was already
//    recorded does nothing, so a job the queue runs twice cannot fork a second chain.
import type { Kysely, Transaction } from 'kysely';
import type { Environment } from '../platform/config.ts';
import { ApiError, notFound, validationError } from '../platform/http/errors.ts';
import { decodeCursor, pageOf } from '../platform/http/pagination.ts';
import type { Logger } from '../platform/logger.ts';
import type { JobDefinition, JobQueue } from '../platform/queue.ts';
import { iso, isoOrNull } from '../platform/time.ts';
import { toEventBody } from '../events/service.ts';
import type { EventService, EventType, RecordedEvent } from '../events/service.ts';
import { UnsafeAddressError, hostOf, productionUrlProblem, resolveSafely, webhookUrlProblem } from './address-safety.ts';
import type { Resolver } from './address-safety.ts';
import { WebhookRepository } from './repository.ts';
import type { AttemptRow, DeliveryRow, DeliveryStatus, DeliveryTarget, EndpointRow, EndpointStatus } from './repository.ts';
import { RETRY_LIMIT, retryDelayMs } from './retry.ts';
import { WebhookSender } from './sender.ts';
import type { AttemptOutcome } from './sender.ts';
import { newSigningSecret, signedHeaders } from './signing.ts';
import { newId } from '../platform/ids.ts';

export const DELIVERY_JOB = 'webhooks.deliver';
/** An enabled endpoint and the event types it takes. */
type Subscription = Pick<EndpointRow, 'id' | 'event_types'>;
const PRUNE_JOB = 'webhooks.prune';
/** How long the delivery log keeps a finished delivery and its attempts. */
export const DELIVERY_RETENTION_DAYS = 30;
// Delivery attempts in flight at once in one process: workers × batch. Each worker fetches a batch
// and fetches the next once the slowest attempt of the batch is done (bounded by the timeout).
const DELIVERY_WORKERS = 4;
const DELIVERY_BATCH = 25;

/** Step n of the automatic chain (1 = first attempt), or a replay asked for by hand. */
export type DeliveryJob = { deliveryId: string; step: number } | { deliveryId: string; manual: true };

// Why the service stopped sending to an endpoint.
export const DISABLED_REASONS = {
  byUser: 'disabled_by_user',
  gone: 'endpoint_gone',
  failures: 'too_many_failures',
} as const;

// The delivery state machine: the only moves a delivery can make.
const DELIVERY_MOVES: Record<DeliveryStatus, readonly DeliveryStatus[]> = {
  PENDING: ['SUCCEEDED', 'FAILED'],
  // A replay by hand that gets through.
  FAILED: ['SUCCEEDED'],
  SUCCEEDED: [],
};
const canMove = (from: DeliveryStatus, to: DeliveryStatus) => DELIVERY_MOVES[from].includes(to);

export interface WebhookSettings {
  env: Environment;
  timeoutMs: number;
  secretOverlapSeconds: number;
  maxConsecutiveFailures: number;
  /** Multiplies retry backoff; 1 except in tests. */
  retryScale: number;
  userAgent: string;
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string | null;
  eventTypes: EventType[];
  status: EndpointStatus;
  disabledReason: string | null;
  disabledAt: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryAttempt {
  attemptNumber: number;
  trigger: AttemptRow['trigger'];
  succeeded: boolean;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
  startedAt: string;
  finishedAt: string;
}

export interface WebhookDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
  attempts: DeliveryAttempt[];
}

const toEndpoint = (row: EndpointRow, now = new Date()): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  description: row.description,
  eventTypes: row.event_types as EventType[],
  status: row.status,
  disabledReason: row.disabled_reason,
  disabledAt: isoOrNull(row.disabled_at),
  previousSecretExpiresAt: row.previous_secret && row.previous_secret_expires_at && row.previous_secret_expires_at > now ? iso(row.previous_secret_expires_at) : null,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
});

const toAttempt = (row: AttemptRow): DeliveryAttempt => ({
  attemptNumber: row.attempt_number,
  trigger: row.trigger,
  succeeded: row.succeeded,
  statusCode: row.status_code,
  latencyMs: row.latency_ms,
  responseBody: row.response_body,
  error: row.error,
  startedAt: iso(row.started_at),
  finishedAt: iso(row.finished_at),
});

const toDelivery = (row: DeliveryRow, attempts: AttemptRow[]): WebhookDelivery => ({
  id: row.id,
  endpointId: row.endpoint_id,
  eventId: row.event_id,
  eventType: row.event_type as EventType,
  status: row.status,
  attemptCount: row.attempt_count,
  nextAttemptAt: isoOrNull(row.next_attempt_at),
  lastAttemptAt: isoOrNull(row.last_attempt_at),
  failureReason: row.failure_reason,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
  attempts: attempts.map(toAttempt),
});

const unsafeUrl = (message: string) => new ApiError(422, 'unsafe_webhook_url', message);

/** The secrets that sign a delivery made at `now`: the current one, plus the replaced one during the overlap. */
export function signingSecrets(endpoint: Pick<EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>, now: Date): string[] {
  const secrets = [endpoint.secret];
  if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now) secrets.push(endpoint.previous_secret);
  return secrets;
}

export class WebhookService {
  readonly #db: Kysely<any>;
  readonly #repo: WebhookRepository;
  readonly #events: EventService;
  readonly #queue: JobQueue;
  readonly #log: Logger;
  readonly #settings: WebhookSettings;
  readonly #sender: WebhookSender;
  readonly #resolver: Resolver | undefined;
  // Keyed by the transaction object, so each entry goes with its transaction.
  readonly #subscriptionReads = new WeakMap<Transaction<any>, Map<string, Promise<Subscription[]>>>();

  constructor(deps: { db: Kysely<any>; events: EventService; queue: JobQueue; log: Logger; settings: WebhookSettings; resolver?: Resolver }) {
    this.#db = deps.db;
    this.#repo = new WebhookRepository(deps.db);
    this.#events = deps.events;
    this.#queue = deps.queue;
    this.#log = deps.log;
    this.#settings = deps.settings;
    this.#resolver = deps.resolver;
    this.#sender = new WebhookSender({
      timeoutMs: deps.settings.timeoutMs,
      safeAddressesOnly: deps.settings.env === 'production',
      userAgent: deps.settings.userAgent,
      ...(deps.resolver ? { resolver: deps.resolver } : {}),
    });
    deps.events.subscribe(
      (trx, event) => this.fanOut(trx, event),
      (events) => this.#wantsAny(events),
      (refs) => this.#repo.unsubscribedCondition(refs),
    );
  }

  /**
   * Whether any enabled endpoint of these events' organizations takes their types: asked before
   * the events are recorded, so a producer whose events nobody subscribes to writes them without
   * running fanOut. An endpoint enabled after this answer and before the events commit does not
   * get them, as one enabled after they commit would not.
   */
  async #wantsAny(events: Array<{ organizationId: string; type: EventType }>): Promise<boolean> {
    const organizations = [...new Set(events.map((e) => e.organizationId))];
    const subscribed = await Promise.all(organizations.map((id) => this.#repo.subscribedTypes(id)));
    const types = new Map(organizations.map((id, i) => [id, subscribed[i]!]));
    return events.some((e) => types.get(e.organizationId)!.includes(e.type));
  }

  /** The jobs of this domain, for the composition root to declare on the queue. */
  jobs(): JobDefinition<any>[] {
    const prune: JobDefinition = {
      name: PRUNE_JOB,
      cron: '23 3 * * *',
      handler: async () => {
        await this.prune();
      },
    };
    return [this.#deliveryJob(), prune];
  }

  /** Forgets finished deliveries (and their attempts) after DELIVERY_RETENTION_DAYS. */
  async prune(): Promise<number> {
    const removed = await this.#repo.deleteFinishedBefore(new Date(Date.now() - DELIVERY_RETENTION_DAYS * 86_400_000));
    if (removed) this.#log.info({ removed }, 'pruned old webhook deliveries');
    return removed;
  }

  #deliveryJob(): JobDefinition<DeliveryJob> {
    return {
      name: DELIVERY_JOB,
      handler: (job) => this.deliver(job),
      concurrency: DELIVERY_WORKERS,
      batchSize: DELIVERY_BATCH,
      pollingIntervalSeconds: 0.5,
      queue: {
        // The lease of one attempt: the request timeout plus room for the bookkeeping. A process
        // killed mid-attempt leaves the job active until then; the queue then runs it again.
        expireInSeconds: Math.ceil(this.#settings.timeoutMs / 1000) + 15,
        // Retries here only cover the job itself failing (the database was unreachable); HTTP
        // failures are recorded and rescheduled by deliver() on the webhook backoff.
        retryLimit: 10,
        retryDelay: 5,
        retryBackoff: true,
      },
    };
  }

  async close(): Promise<void> {
    await this.#sender.close();
  }

  // Endpoints

  async #checkUrl(raw: string): Promise<string> {
    const problem = webhookUrlProblem(raw);
    if (problem) throw validationError([{ path: 'url', message: problem }]);
    const url = new URL(raw);
    if (this.#settings.env === 'production') {
      const unsafe = productionUrlProblem(url);
      if (unsafe) throw unsafeUrl(`url: ${unsafe}`);
      try {
        await resolveSafely(hostOf(url), this.#resolver);
      } catch (err) {
        if (err instanceof UnsafeAddressError) throw unsafeUrl(`url: ${err.message}`);
        throw err;
      }
    }
    return url.toString();
  }

  async createEndpoint(organizationId: string, input: { url: string; eventTypes: EventType[]; description?: string | undefined }) {
    const url = await this.#checkUrl(input.url);
    const secret = newSigningSecret();
    const row = await this.#repo.insertEndpoint({
      id: newId(),
      organization_id: organizationId,
      url,
      description: input.description ?? null,
      event_types: [...new Set(input.eventTypes)],
      secret,
    });
    return { ...toEndpoint(row), secret };
  }

  async getEndpoint(organizationId: string, id: string): Promise<WebhookEndpoint> {
    const row = await this.#repo.findEndpoint(organizationId, id);
    if (!row) throw notFound('Webhook endpoint');
    return toEndpoint(row);
  }

  async listEndpoints(organizationId: string, limit: number, cursor?: string) {
    const { rows, total } = await this.#repo.listEndpoints(organizationId, limit, decodeCursor(cursor));
    const { page, nextCursor } = pageOf(rows.map((r) => toEndpoint(r)), limit);
    return { data: page, meta: { total, nextCursor } };
  }

  async updateEndpoint(
    organizationId: string,
    id: string,
    input: { url?: string | undefined; eventTypes?: EventType[] | undefined; description?: string | null | undefined; status?: EndpointStatus | undefined },
  ): Promise<WebhookEndpoint> {
    const url = input.url === undefined ? undefined : await this.#checkUrl(input.url);
    return this.#db.transaction().execute(async (trx) => {
      const current = await this.#repo.lockEndpoint(trx, organizationId, id);
      if (!current) throw notFound('Webhook endpoint');
      const changes: Parameters<WebhookRepository['updateEndpoint']>[3] = {};
      if (url !== undefined) changes.url = url;
      if (input.eventTypes !== undefined) changes.event_types = [...new Set(input.eventTypes)];
      if (input.description !== undefined) changes.description = input.description;
      if (input.status !== undefined && input.status !== current.status) {
        const now = new Date();
        if (input.status === 'ENABLED') Object.assign(changes, { status: 'ENABLED', disabled_reason: null, disabled_at: null, consecutive_failures: 0 });
        else Object.assign(changes, { status: 'DISABLED', disabled_reason: DISABLED_REASONS.byUser, disabled_at: now });
        await this.#repo.insertStatusChange(trx, {
          id: newId(),
          endpoint_id: id,
          organization_id: organizationId,
          status: input.status,
          reason: input.status === 'ENABLED' ? 'enabled_by_user' : DISABLED_REASONS.byUser,
          detail: null,
        });
      }
      const row = await this.#repo.updateEndpoint(trx, organizationId, id, changes);
      return toEndpoint(row!);
    });
  }

  async deleteEndpoint(organizationId: string, id: string): Promise<void> {
    const deleted = await this.#db.transaction().execute((trx) => this.#repo.deleteEndpoint(trx, organizationId, id));
    if (!deleted) throw notFound('Webhook endpoint');
  }

  /**
   * Issues a new signing secret, shown once. The replaced one keeps signing (a second signature
   * in the same header) until the overlap ends, so receivers can switch without losing anything.
   */
  async rotateSecret(organizationId: string, id: string) {
    const secret = newSigningSecret();
    const now = new Date();
    const overlapMs = this.#settings.secretOverlapSeconds * 1000;
    const row = await this.#db.transaction().execute(async (trx) => {
      const current = await this.#repo.lockEndpoint(trx, organizationId, id);
      if (!current) throw notFound('Webhook endpoint');
      return this.#repo.updateEndpoint(trx, organizationId, id, {
        secret,
        previous_secret: overlapMs > 0 ? current.secret : null,
        previous_secret_expires_at: overlapMs > 0 ? new Date(now.getTime() + overlapMs) : null,
      });
    });
    return { ...toEndpoint(row!, now), secret };
  }

  // Deliveries

  /** Runs inside the transaction that records the event (see the top of this file). */
  async fanOut(trx: Transaction<any>, event: RecordedEvent): Promise<void> {
    const endpointIds = (await this.#subscriptionsIn(trx, event.organizationId)).filter((e) => e.event_types.includes(event.type)).map((e) => e.id);
    if (!endpointIds.length) return;
    const rows = endpointIds.map((endpointId) => ({
      id: newId(),
      organization_id: event.organizationId,
      endpoint_id: endpointId,
      event_id: event.id,
      event_type: event.type,
      next_attempt_at: event.createdAt,
    }));
    await this.#repo.insertDeliveries(trx, rows);
    for (const row of rows) await this.#queue.send<DeliveryJob>(DELIVERY_JOB, { deliveryId: row.id, step: 1 }, { trx });
  }

  /**
   * The organization's subscriptions, read once per transaction: a change records several events
   * in one (a leg's, then the transfer's), and one read serves them all, as of the first.
   */
  #subscriptionsIn(trx: Transaction<any>, organizationId: string): Promise<Subscription[]> {
    let byOrganization = this.#subscriptionReads.get(trx);
    if (!byOrganization) this.#subscriptionReads.set(trx, (byOrganization = new Map()));
    let read = byOrganization.get(organizationId);
    if (!read) byOrganization.set(organizationId, (read = this.#repo.enabledSubscriptions(trx, organizationId)));
    return read;
  }

  async listDeliveries(organizationId: string, endpointId: string, limit: number, cursor?: string) {
    if (!(await this.#repo.findEndpoint(organizationId, endpointId))) throw notFound('Webhook endpoint');
    const { rows, total } = await this.#repo.listDeliveries(organizationId, endpointId, limit, decodeCursor(cursor));
    const { page, nextCursor } = pageOf(rows.map((row) => ({ row, id: row.id, createdAt: row.created_at })), limit);
    const attempts = await this.#repo.attemptsOf(page.map((d) => d.id));
    const byDelivery = Map.groupBy(attempts, (a) => a.delivery_id);
    return { data: page.map(({ row }) => toDelivery(row, byDelivery.get(row.id) ?? [])), meta: { total, nextCursor } };
  }

  /** Sends the delivery's event again now, under the same webhook-id; the attempt is marked MANUAL. */
  async replay(organizationId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    const endpoint = await this.#repo.findEndpoint(organizationId, endpointId);
    if (!endpoint) throw notFound('Webhook endpoint');
    const delivery = await this.#repo.findDelivery(organizationId, endpointId, deliveryId);
    if (!delivery) throw notFound('Delivery');
    if (endpoint.status !== 'ENABLED') throw new ApiError(409, 'webhook_endpoint_disabled', 'Enable the endpoint before replaying its deliveries');
    await this.#queue.send<DeliveryJob>(DELIVERY_JOB, { deliveryId, manual: true });
    return toDelivery(delivery, await this.#repo.attemptsOf([deliveryId]));
  }

  /** The delivery job: one attempt, then its bookkeeping (and the next retry) in one transaction. */
  async deliver(job: DeliveryJob): Promise<void> {
    const target = await this.#repo.deliveryTarget(job.deliveryId);
    if (!target) return; // its endpoint was deleted
    const step = 'step' in job ? job.step : null;
    if (step !== null && (target.status !== 'PENDING' || target.retry_step !== step - 1)) return; // already done
    if (target.endpoint_status !== 'ENABLED') {
      if (step !== null) await this.#repo.failPending(target.id, 'endpoint_disabled');
      return;
    }
    const event = await this.#events.get(target.organization_id, target.event_id);
    const body = JSON.stringify(toEventBody(event));
    const startedAt = new Date();
    const headers = signedHeaders(signingSecrets(target, startedAt), event.id, startedAt, body);
    const outcome = await this.#sender.send(target.url, headers, body);
    const finishedAt = new Date(startedAt.getTime() + outcome.latencyMs);
    await this.#db.transaction().execute((trx) => this.#record(trx, target, step, outcome, startedAt, finishedAt));
  }

  async #record(trx: Transaction<any>, target: DeliveryTarget, step: number | null, outcome: AttemptOutcome, startedAt: Date, finishedAt: Date): Promise<void> {
    const current = await this.#repo.numberAttempt(trx, target.id, finishedAt);
    if (!current) return;
    await this.#repo.insertAttempt(trx, {
      id: newId(),
      delivery_id: target.id,
      attempt_number: current.attempt_count,
      trigger: step === null ? 'MANUAL' : 'AUTOMATIC',
      status_code: outcome.statusCode,
      latency_ms: outcome.latencyMs,
      response_body: outcome.responseBody,
      error: outcome.error,
      succeeded: outcome.succeeded,
      started_at: startedAt,
      finished_at: finishedAt,
    });
    // Only the job of the chain's current step moves the chain on; a replay or a stray duplicate
    // only records its attempt (and a success).
    const ownsChain = step !== null && current.status === 'PENDING' && current.retry_step === step - 1;

    if (outcome.succeeded) {
      await this.#repo.resetFailures(trx, target.endpoint_id);
      if (canMove(current.status, 'SUCCEEDED')) {
        await this.#repo.updateDelivery(trx, target.id, { status: 'SUCCEEDED', next_attempt_at: null, failure_reason: null, ...(ownsChain ? { retry_step: step } : {}) });
      }
      return;
    }

    const disabled = await this.#countFailure(trx, target, outcome, finishedAt);
    if (!ownsChain) return;
    if (disabled) {
      await this.#repo.updateDelivery(trx, target.id, { status: 'FAILED', retry_step: step, next_attempt_at: null, failure_reason: 'endpoint_disabled' });
    } else if (step > RETRY_LIMIT) {
      await this.#repo.updateDelivery(trx, target.id, { status: 'FAILED', retry_step: step, next_attempt_at: null, failure_reason: 'retries_exhausted' });
    } else {
      const delay = retryDelayMs(step, { retryAfter: outcome.retryAfter, now: finishedAt, scale: this.#settings.retryScale });
      const next = new Date(finishedAt.getTime() + delay);
      await this.#repo.updateDelivery(trx, target.id, { retry_step: step, next_attempt_at: next });
      await this.#queue.send<DeliveryJob>(DELIVERY_JOB, { deliveryId: target.id, step: step + 1 }, { trx, startAfter: next });
    }
  }

  /** Counts a failed attempt against the endpoint and disables it on 410 or a long failure streak. */
  async #countFailure(trx: Transaction<any>, target: DeliveryTarget, outcome: AttemptOutcome, at: Date): Promise<boolean> {
    const streak = await this.#repo.countFailure(trx, target.endpoint_id);
    if (!streak) return true;
    if (streak.status !== 'ENABLED') return true;
    let reason: string | null = null;
    let detail = '';
    if (outcome.statusCode === 410) {
      reason = DISABLED_REASONS.gone;
      detail = 'The endpoint answered 410 Gone';
    } else if (streak.consecutive_failures >= this.#settings.maxConsecutiveFailures) {
      reason = DISABLED_REASONS.failures;
      detail = `${streak.consecutive_failures} delivery attempts in a row failed; the last: ${outcome.error ?? 'unknown error'}`;
    }
    if (!reason) return false;
    const disabled = await this.#repo.disableIfEnabled(trx, target.endpoint_id, reason, at);
    if (disabled) {
      await this.#repo.insertStatusChange(trx, { id: newId(), endpoint_id: disabled.id, organization_id: disabled.organization_id, status: 'DISABLED', reason, detail });
      this.#log.warn({ webhookEndpointId: disabled.id, organizationId: disabled.organization_id, reason, detail }, 'webhook endpoint disabled');
    }
    return true;
  }
}
