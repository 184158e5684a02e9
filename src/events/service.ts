// Customer-visible events (SPEC.md "Events"). Producers call record() inside the transaction of
// the change itself, so an event exists exactly when its change committed (transactional outbox).
// Subscribers (webhook fan-out) run inside that same transaction, so whatever they write (delivery
// rows, queued jobs) commits or rolls back together with the event.
import { sql } from 'kysely';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import type { StatementPart } from '../platform/db/recordset.ts';
import { ApiError, notFound } from '../platform/http/errors.ts';
import { iso } from '../platform/time.ts';
import { EventRepository } from './repository.ts';
import type { EventRow } from './repository.ts';
import { newId } from '../platform/ids.ts';

export const EVENT_TYPES = ['transfer.status_changed', 'transfer.leg_status_changed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface RecordedEvent {
  id: string;
  type: EventType;
  organizationId: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** The event as the API and webhook deliveries show it. */
export interface EventBody {
  id: string;
  type: EventType;
  createdAt: string;
  data: Record<string, unknown>;
}

/** An event to record: the change's own id and instant when it keeps a record of them (see record()). */
export interface NewEvent {
  organizationId: string;
  type: EventType;
  data: Record<string, unknown>;
  id?: string;
  occurredAt?: Date;
}

export type EventSubscriber = (trx: Transaction<any>, event: RecordedEvent) => Promise<void>;

/**
 * Whether a subscriber has anything to do for events of these organizations and types, asked
 * before they are recorded. A subscriber that answers no for all of them lets the producer write
 * the events with its own statement (insertPart) instead of a transaction that runs it.
 */
export type SubscriberInterest = (events: Array<Pick<NewEvent, 'organizationId' | 'type'>>) => Promise<boolean>;

/** SubscriberInterest's "no" as SQL: true when the subscriber wants no event of the type `refs.type` from the organization `refs.organizationId`. */
export type UnwantedCondition = (refs: { organizationId: RawBuilder<unknown>; type: RawBuilder<unknown> }) => RawBuilder<boolean>;

// What an event may carry (DECISIONS.md §7). Anything else a producer passes, such as a provider's
// raw payload or credentials, is dropped here, before it can be stored, listed or delivered.
const DATA_FIELDS = ['transferId', 'status', 'previousStatus', 'blockingParty', 'version'] as const;
// The leg as DECISIONS.md §5 defines it; its amounts stay on the transfer.
const LEG_FIELDS = ['position', 'kind', 'provider', 'providerReference', 'status', 'progressStage', 'updatedAt'] as const;

function pick(source: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) if (source[f] !== undefined) out[f] = source[f];
  return out;
}

export function eventData(type: EventType, data: Record<string, unknown>): Record<string, unknown> {
  const out = pick(data, DATA_FIELDS);
  const leg = data.leg;
  if (type === 'transfer.leg_status_changed' && leg && typeof leg === 'object') out.leg = pick(leg as Record<string, unknown>, LEG_FIELDS);
  return out;
}

export const toEventBody = (event: RecordedEvent): EventBody => ({
  id: event.id,
  type: event.type,
  createdAt: iso(event.createdAt),
  data: event.data,
});

const toRecordedEvent = (row: EventRow): RecordedEvent => ({
  id: row.id,
  type: row.type as EventType,
  organizationId: row.organization_id,
  data: row.data,
  createdAt: row.created_at,
});

export class EventService {
  readonly #repo: EventRepository;
  readonly #subscribers: Array<{ run: EventSubscriber; wants: SubscriberInterest | null; unwanted: UnwantedCondition | null }> = [];

  constructor(db: Kysely<any>) {
    this.#repo = new EventRepository(db);
  }

  /**
   * Runs the subscriber inside every recording transaction, after the event row is written.
   * `wants`, when given, tells beforehand whether it has anything to do (see SubscriberInterest);
   * `unwanted`, as a condition of a write, that it has nothing to do (see UnwantedCondition).
   */
  subscribe(subscriber: EventSubscriber, wants?: SubscriberInterest, unwanted?: UnwantedCondition): void {
    this.#subscribers.push({ run: subscriber, wants: wants ?? null, unwanted: unwanted ?? null });
  }

  /**
   * needSubscribers() answering no, as a guard's condition (platform/db/guard.ts) on the write
   * that records an event of this type for this organization with insertPart(); null when some
   * subscriber cannot say it as a condition (then ask needSubscribers()).
   */
  unsubscribedCondition(refs: { organizationId: RawBuilder<unknown>; type: RawBuilder<unknown> }): RawBuilder<boolean> | null {
    const conditions: Array<RawBuilder<boolean>> = [];
    for (const subscriber of this.#subscribers) {
      if (!subscriber.unwanted) return null;
      conditions.push(subscriber.unwanted(refs));
    }
    return conditions.length ? sql<boolean>`(${sql.join(conditions, sql` and `)})` : sql<boolean>`true`;
  }

  /**
   * Whether recording these events must run subscribers (recordMany, in a transaction), or
   * whether writing their rows is all there is to it (insertPart).
   */
  async needSubscribers(events: Array<Pick<NewEvent, 'organizationId' | 'type'>>): Promise<boolean> {
    if (!events.length) return false;
    for (const subscriber of this.#subscribers) if (!subscriber.wants || (await subscriber.wants(events))) return true;
    return false;
  }

  /**
   * The insert of events no subscriber wants (needSubscribers said so), as a part of the
   * producer's own statement, so that the events commit with the change they describe.
   */
  insertPart(events: NewEvent[]): StatementPart {
    const now = new Date();
    return this.#repo.insertPart(events.map((event) => this.#row(event, now)));
  }

  #row(event: NewEvent, now: Date) {
    return { id: event.id ?? newId(), organization_id: event.organizationId, type: event.type, data: eventData(event.type, event.data), created_at: event.occurredAt ?? now };
  }

  /**
   * Records an event in the caller's transaction; its id is stable across every delivery. A change that keeps its own record of the moment
   * (a transfer's timeline item) passes that record's id and time, so the event a receiver gets,
   * the timeline and the reports built from it name the change by one id and one instant.
   */
  async record(trx: Transaction<any>, event: NewEvent): Promise<RecordedEvent> {
    return (await this.recordMany(trx, [event]))[0]!;
  }

  /**
   * record() for several events of one transaction, written in one statement (a batch of
   * transfers prepared together records two events each); the subscribers then run for each, in
   * the order given.
   */
  async recordMany(trx: Transaction<any>, events: NewEvent[]): Promise<RecordedEvent[]> {
    const now = new Date();
    const rows = events.map((event) => this.#row(event, now));
    await this.#repo.insertMany(trx, rows);
    const recorded = rows.map((row): RecordedEvent => ({ id: row.id, type: row.type, organizationId: row.organization_id, data: row.data, createdAt: row.created_at }));
    for (const event of recorded) for (const subscriber of this.#subscribers) await subscriber.run(trx, event);
    return recorded;
  }

  async get(organizationId: string, id: string): Promise<RecordedEvent> {
    const row = await this.#repo.find(organizationId, id);
    if (!row) throw notFound('Event');
    return toRecordedEvent(row);
  }

  /** The organization's events after the given one, in the order a catching-up reader needs. */
  async list(organizationId: string, options: { after?: string | undefined; afterParameter?: 'after' | 'cursor'; limit: number }) {
    let position = null;
    if (options.after) {
      position = await this.#repo.position(organizationId, options.after);
      if (!position) {
        // Named as the client sent it: after= or cursor= (the same position).
        const param = options.afterParameter ?? 'after';
        throw new ApiError(422, 'validation_error', `${param}: no event with this id in your organization`, {
          details: [{ path: `query.${param}`, message: 'no event with this id in your organization' }],
        });
      }
    }
    const { rows, total } = await this.#repo.listAfter(organizationId, position, options.limit);
    const page = rows.slice(0, options.limit).map((r) => toEventBody(toRecordedEvent(r)));
    const last = page[page.length - 1];
    return { data: page, meta: { total, nextCursor: rows.length > options.limit && last ? last.id : null } };
  }
}
