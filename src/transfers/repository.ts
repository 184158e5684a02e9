// SQL of transfers, their legs and their timeline. Every customer-facing read filters by
// organization_id; the engine's own reads (jobs, ops) go by id alone.
import { CompiledQuery, sql } from 'kysely';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import { JsonText, encodeRows, insertRows, recordset } from '../platform/db/recordset.ts';
import type { StatementPart } from '../platform/db/recordset.ts';
import { statement } from '../platform/db/statement.ts';
import { GUARDED_PLANNED_RUNS } from '../platform/db/guard.ts';
import type { Statement } from '../platform/db/statement.ts';
import { lookupBatcher } from '../platform/batch.ts';
import type { Cursor } from '../platform/http/pagination.ts';
import { ceilToMillisecond } from '../platform/time.ts';
import type { LegKind, LegStatus } from '../providers/adapter.ts';
import type { Rail } from '../providers/adapter.ts';
import type { BlockingParty, TransferStatus } from './state-machine.ts';

export interface TransferRow {
  id: string;
  organization_id: string;
  entity_id: string;
  quote_id: string;
  quote_option_id: string;
  status: TransferStatus;
  blocking_party: BlockingParty;
  status_reason: string | null;
  version: number;
  client_reference: string | null;
  payment_references: Record<string, string> | null;
  original_message_id: string | null;
  from_rail: Rail;
  to_rail: Rail;
  source_asset: string;
  destination_asset: string;
  fee_currency: string;
  quoted_source_amount: string;
  quoted_destination_amount: string;
  quoted_fee_total: string;
  quoted_rate: string;
  actual_source_amount: string | null;
  actual_destination_amount: string | null;
  actual_fee_total: string | null;
  destination_type: 'FIAT_ACCOUNT' | 'CRYPTO_WALLET';
  destination_id: string;
  destination_version: number;
  destination_relationship: 'SELF' | 'THIRD_PARTY';
  destination_snapshot: Record<string, unknown>;
  sandbox_outcome: SandboxOutcome | null;
  funds_received_at: Date | null;
  reviewed_at: Date | null;
  /**
   * The transfer as the API shows it, as the JSON text GET sends, kept in step with every change
   * (migrations 6 and 10); null on rows written by other means.
   */
  api_view: string | null;
  created_at: Date;
  updated_at: Date;
}

export type SandboxOutcome = 'SUCCEED' | 'FAIL' | 'RETURN' | 'REVIEW' | 'REFUND';

export interface LegRow {
  id: string;
  transfer_id: string;
  position: number;
  kind: LegKind;
  provider_id: string;
  provider_name: string;
  provider_reference: string | null;
  status: LegStatus;
  progress_stage: string;
  from_asset: string;
  to_asset: string;
  rail: Rail | null;
  quoted_amount_in: string;
  quoted_amount_out: string;
  quoted_fee: string;
  quoted_rate: string;
  actual_amount_in: string | null;
  actual_amount_out: string | null;
  status_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface TimelineRow {
  id: string;
  sequence: string;
  transfer_id: string;
  organization_id: string;
  kind: 'STATUS' | 'LEG';
  from_status: TransferStatus | null;
  to_status: TransferStatus;
  blocking_party: BlockingParty;
  reason: string | null;
  leg_position: number | null;
  leg_status: LegStatus | null;
  progress_stage: string | null;
  version: number;
  occurred_at: Date;
}

interface Tables {
  transfers: WithDefaults<TransferRow, 'created_at' | 'updated_at' | 'version' | 'funds_received_at' | 'reviewed_at' | 'api_view'>;
  transfer_legs: WithDefaults<LegRow, 'created_at' | 'updated_at' | 'actual_amount_in' | 'actual_amount_out' | 'status_reason'>;
  transfer_events: WithDefaults<TimelineRow, 'sequence' | 'occurred_at'>;
}

export type NewTransfer = Omit<TransferRow, 'created_at' | 'updated_at' | 'version' | 'funds_received_at' | 'reviewed_at'>;
export type NewLeg = Omit<LegRow, 'created_at' | 'updated_at' | 'actual_amount_in' | 'actual_amount_out' | 'status_reason'>;
export type NewTimelineRow = Omit<TimelineRow, 'sequence' | 'occurred_at'>;

/** The error insertMany fails with when a transfer already has one of the quote options. */
export function isOptionTaken(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && e.constraint === 'transfers_quote_option_id_key';
}

/** One transfer to create: its row, legs and first timeline item, stamped with one instant. */
export interface NewCreation {
  transfer: NewTransfer;
  legs: NewLeg[];
  first: NewTimelineRow;
  createdAt: Date;
  /** Made from facts read earlier, which the statement checks again (CreationGuard). */
  guarded: boolean;
}

/** The columns of a transfer being created that a guard's condition reads. */
export type CreationRefs = Record<'organizationId' | 'entityId' | 'quoteOptionId' | 'destinationType' | 'destinationId' | 'destinationVersion', RawBuilder<unknown>>;

/**
 * What a guarded creation must still find true when it is written (platform/db/guard.ts). `name`
 * tells guards apart: the statement is built once per guard and set of parts.
 */
export interface CreationGuard {
  name: string;
  condition: (transfer: CreationRefs) => RawBuilder<boolean>;
}

// The columns a creation writes (version, funds_received_at, reviewed_at and sequence are the database's defaults).
const TRANSFER_COLUMNS = {
  id: 'uuid',
  organization_id: 'uuid',
  entity_id: 'uuid',
  quote_id: 'uuid',
  quote_option_id: 'uuid',
  status: 'text',
  blocking_party: 'text',
  status_reason: 'text',
  client_reference: 'text',
  payment_references: 'jsonb',
  original_message_id: 'text',
  from_rail: 'jsonb',
  to_rail: 'jsonb',
  source_asset: 'text',
  destination_asset: 'text',
  fee_currency: 'text',
  quoted_source_amount: 'numeric',
  quoted_destination_amount: 'numeric',
  quoted_fee_total: 'numeric',
  quoted_rate: 'text',
  actual_source_amount: 'numeric',
  actual_destination_amount: 'numeric',
  actual_fee_total: 'numeric',
  destination_type: 'text',
  destination_id: 'uuid',
  destination_version: 'integer',
  destination_relationship: 'text',
  destination_snapshot: 'jsonb',
  sandbox_outcome: 'text',
  api_view: 'text',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
} as const;
const LEG_COLUMNS = {
  id: 'uuid',
  transfer_id: 'uuid',
  position: 'integer',
  kind: 'text',
  provider_id: 'text',
  provider_name: 'text',
  provider_reference: 'text',
  status: 'text',
  progress_stage: 'text',
  from_asset: 'text',
  to_asset: 'text',
  rail: 'jsonb',
  quoted_amount_in: 'numeric',
  quoted_amount_out: 'numeric',
  quoted_fee: 'numeric',
  quoted_rate: 'text',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
} as const;
const ITEM_COLUMNS = {
  id: 'uuid',
  transfer_id: 'uuid',
  organization_id: 'uuid',
  kind: 'text',
  from_status: 'text',
  to_status: 'text',
  blocking_party: 'text',
  reason: 'text',
  leg_position: 'integer',
  leg_status: 'text',
  progress_stage: 'text',
  version: 'integer',
  occurred_at: 'timestamptz',
} as const;
const TRANSFER_NAMES = Object.keys(TRANSFER_COLUMNS).join(', ');
/** A transfer as the creation statement reads it: its columns, and whether its guard applies. */
const TRANSFER_INPUT = { ...TRANSFER_COLUMNS, guarded: 'boolean' } as const;

// What a change writes of a leg and of a transfer (writeChanges).
const LEG_CHANGE_COLUMNS = {
  id: 'uuid',
  transfer_id: 'uuid',
  status: 'text',
  progress_stage: 'text',
  provider_reference: 'text',
  actual_amount_in: 'numeric',
  actual_amount_out: 'numeric',
  status_reason: 'text',
  updated_at: 'timestamptz',
} as const;
const TRANSFER_CHANGE_COLUMNS = {
  id: 'uuid',
  status: 'text',
  blocking_party: 'text',
  status_reason: 'text',
  version: 'integer',
  updated_at: 'timestamptz',
  api_view: 'text',
  funds_received_at: 'timestamptz',
  reviewed_at: 'timestamptz',
  actual_source_amount: 'numeric',
  actual_destination_amount: 'numeric',
  actual_fee_total: 'numeric',
} as const;

// What a change writes of a transfer (c: a row of TRANSFER_CHANGE_COLUMNS), in both change statements.
const TRANSFER_CHANGE_SET = sql`status = c.status, blocking_party = c.blocking_party, status_reason = c.status_reason, version = c.version,
  updated_at = c.updated_at, api_view = c.api_view, funds_received_at = c.funds_received_at, reviewed_at = c.reviewed_at,
  actual_source_amount = c.actual_source_amount, actual_destination_amount = c.actual_destination_amount, actual_fee_total = c.actual_fee_total`;

/** Each changed leg as the change leaves it (rows of LEG_CHANGE_COLUMNS), returning the ids it matched. */
const updateLegs = (legs: unknown, legIds: unknown) => sql`
  update transfer_legs as l set status = c.status, progress_stage = c.progress_stage, provider_reference = c.provider_reference,
    actual_amount_in = c.actual_amount_in, actual_amount_out = c.actual_amount_out, status_reason = c.status_reason, updated_at = c.updated_at
    from ${recordset(legs, LEG_CHANGE_COLUMNS, 'c')}
   where l.id = c.id and l.transfer_id = c.transfer_id and l.id = any(${legIds}::uuid[])
  returning l.id`;

/**
 * Several changes in one statement: the timeline items, and each changed leg and transfer as the
 * change leaves it. Answers how many legs and transfers matched. The rows to change are also
 * named by their ids as arrays: a json_to_recordset is guessed at a hundred rows, and joined on
 * that guess alone, the generic plan scanned every leg to update a few.
 */
const WRITE_CHANGES = statement<{ items: string; legs: string; transfers: string; legIds: string[]; transferIds: string[] }, { transfers: number; legs: number }>(
  (v) => sql`
    with new_items as (${insertRows('transfer_events', v.items, ITEM_COLUMNS)}),
         changed_legs as (${updateLegs(v.legs, v.legIds)}),
         changed_transfers as (
           update transfers as t set ${TRANSFER_CHANGE_SET}
             from ${recordset(v.transfers, TRANSFER_CHANGE_COLUMNS, 'c')}
            where t.id = c.id and t.id = any(${v.transferIds}::uuid[])
           returning t.id
         )
    select (select count(*)::int from changed_transfers) as transfers, (select count(*)::int from changed_legs) as legs`,
);
/** WRITE_CHANGES' transfer columns, with the version each transfer must still be at (writeChangesGuarded). */
const GUARDED_TRANSFER_CHANGE_COLUMNS = { ...TRANSFER_CHANGE_COLUMNS, expected_version: 'integer' } as const;

/**
 * What a guarded change (writeChangesGuarded) must still find true of each transfer it changes
 * (platform/db/guard.ts), as a condition on the transfer's row. `name` tells guards apart.
 */
export interface ChangeGuard {
  name: string;
  condition: (transfer: { organizationId: RawBuilder<unknown> }) => RawBuilder<boolean>;
}

/** What a leg change may write: its state and what the provider reported, never its identity or plan. */
export type LegPatch = Partial<Pick<LegRow, 'status' | 'progress_stage' | 'provider_reference' | 'actual_amount_in' | 'actual_amount_out' | 'status_reason' | 'updated_at'>>;

export interface TransferDetailRow extends TransferRow {
  legs: LegRow[];
  timeline: TimelineRow[];
}

export interface TransferFilter {
  /** Null: every organization's (operators only). */
  organizationId: string | null;
  status?: TransferStatus | undefined;
  entityId?: string | undefined;
  createdFrom?: string | undefined;
  createdTo?: string | undefined;
}

type Db = Kysely<Tables> | Transaction<Tables>;

// json_build_object turns numeric into a JSON number; amounts are cast to text so that they keep
// every digit (an 18-decimal ETH amount would not survive a float).
const LEG_JSON = sql`json_build_object(
  'id', l.id, 'transfer_id', l.transfer_id, 'position', l.position, 'kind', l.kind, 'provider_id', l.provider_id,
  'provider_name', l.provider_name, 'provider_reference', l.provider_reference, 'status', l.status,
  'progress_stage', l.progress_stage, 'from_asset', l.from_asset, 'to_asset', l.to_asset, 'rail', l.rail,
  'quoted_amount_in', l.quoted_amount_in::text, 'quoted_amount_out', l.quoted_amount_out::text, 'quoted_fee', l.quoted_fee::text, 'quoted_rate', l.quoted_rate,
  'actual_amount_in', l.actual_amount_in::text, 'actual_amount_out', l.actual_amount_out::text,
  'status_reason', l.status_reason, 'created_at', l.created_at, 'updated_at', l.updated_at)`;
const EVENT_JSON = sql`json_build_object(
  'id', e.id, 'sequence', e.sequence::text, 'kind', e.kind, 'from_status', e.from_status, 'to_status', e.to_status,
  'blocking_party', e.blocking_party, 'reason', e.reason, 'leg_position', e.leg_position, 'leg_status', e.leg_status,
  'progress_stage', e.progress_stage, 'version', e.version, 'occurred_at', e.occurred_at)`;

/** The legs of the transfer aliased `t`, in order, as one JSON column. */
const LEGS_OF_T = sql<LegRow[]>`(select coalesce(json_agg(${LEG_JSON} order by l.position), '[]'::json) from transfer_legs l where l.transfer_id = t.id)`;

const reviveLeg = (l: LegRow): LegRow => ({ ...l, created_at: new Date(l.created_at), updated_at: new Date(l.updated_at) });
const reviveEvent = (e: TimelineRow): TimelineRow => ({ ...e, occurred_at: new Date(e.occurred_at) });

type ViewRow = { view: string | null; status: TransferStatus; organization_id: string };

export class TransferRepository {
  readonly #db: Kysely<Tables>;
  readonly #viewSql: { any: string; own: string };
  readonly #creationStatements = new Map<string, Statement<Record<string, unknown>, unknown>>();
  readonly #guardedChangeStatements = new Map<string, Statement<Record<string, unknown>, unknown>>();
  readonly #withLegs = statement<{ ids: string[] }, TransferRow & { legs: LegRow[] }>((v) =>
    this.#db.selectFrom('transfers as t').selectAll('t').select(LEGS_OF_T.as('legs')).where(sql<boolean>`t.id = any(${v.ids}::uuid[])`),
  );
  readonly #locked = statement<{ ids: string[] }, Pick<TransferRow, 'id' | 'status' | 'version'>>((v) =>
    this.#db.selectFrom('transfers').select(['id', 'status', 'version']).where(sql<boolean>`id = any(${v.ids}::uuid[])`).orderBy('id').forUpdate(),
  );
  readonly #pendingFirst = statement<{ limit: number }, Pick<TransferRow, 'id' | 'updated_at'>>((v) => this.#pendingSetupQuery().limit(v.limit));
  readonly #pendingAfter = statement<{ at: Date; id: string; limit: number }, Pick<TransferRow, 'id' | 'updated_at'>>((v) =>
    this.#pendingSetupQuery()
      .where((eb) => eb.or([eb('updated_at', '>', v.at), eb.and([eb('updated_at', '=', v.at), eb('id', '>', v.id)])]))
      .limit(v.limit),
  );
  // Planned on every run: its first runs come while the table is nearly empty, and the generic
  // plan made then scanned the whole table for each batch (0.24 ms a run) as it grew.
  readonly #takenStatement = statement<{ ids: string[] }, { quote_option_id: string }>((v) => sql`select quote_option_id from transfers where quote_option_id = any(${v.ids}::uuid[])`, {
    planEachRun: true,
  });
  readonly #takenOption = lookupBatcher<string, string>(
    async (optionIds) => (await this.#takenStatement.run(this.#db, { ids: optionIds })).map((r) => r.quote_option_id),
    (id) => id,
    (id) => id,
  );
  constructor(db: Kysely<any>) {
    this.#db = db;
    // Built once: GET /v1/transfers/{id} runs nothing else, and building the query cost as much as sending it.
    const view = this.#db.selectFrom('transfers').select([sql<string | null>`api_view`.as('view'), 'status', 'organization_id']).where('id', '=', '');
    this.#viewSql = { any: view.compile().sql, own: view.where('organization_id', '=', '').compile().sql };
  }

  #on(trx?: Transaction<any>): Db {
    return (trx as Transaction<Tables> | undefined) ?? this.#db;
  }

  /**
   * Inserts transfers, each with its legs and first timeline row, in one statement for all of
   * them, together with the `alongside` statements (other domains' rows that belong to the same
   * change: stored responses, events). All or nothing: a second transfer for a quote option
   * fails it (isOptionTaken). A transfer for the same option that another transaction is still
   * writing is waited for at most lockWaitMs (then LOCK_NOT_AVAILABLE for the whole statement or
   * transaction, like SET LOCAL lock_timeout); options are inserted in id order, so two batches
   * never wait on each other in a circle.
   */
  async insertMany(db: Kysely<any> | Transaction<any>, creations: NewCreation[], options: { lockWaitMs: number; alongside: StatementPart[]; guard: CreationGuard }): Promise<void> {
    if (!creations.length) return;
    // The view is JSON this process made: sent as the document it is, not escaped into a string.
    const transfers = creations.map((c) => ({
      ...c.transfer,
      api_view: c.transfer.api_view === null ? null : new JsonText(c.transfer.api_view),
      created_at: c.createdAt,
      updated_at: c.createdAt,
      guarded: c.guarded,
    }));
    const legs = creations.flatMap((c) => c.legs.map((l) => ({ ...l, created_at: c.createdAt, updated_at: c.createdAt })));
    const items = creations.map((c) => ({ ...c.first, occurred_at: c.createdAt }));
    const values: Record<string, unknown> = {
      transfers: encodeRows(transfers, TRANSFER_INPUT),
      legs: encodeRows(legs, LEG_COLUMNS),
      items: encodeRows(items, ITEM_COLUMNS),
      lockTimeout: String(Math.max(1, Math.floor(options.lockWaitMs))),
    };
    options.alongside.forEach((part, i) => (values[`part${i}`] = part.rows));
    await this.#creationStatement(options.guard, options.alongside).run(db, values);
  }

  /** The creation statement with this guard and these parts beside it, built once per guard and set of part names. */
  #creationStatement(guard: CreationGuard, parts: StatementPart[]): Statement<Record<string, unknown>, unknown> {
    const shape = [guard.name, ...parts.map((p) => p.name)].join(',');
    let built = this.#creationStatements.get(shape);
    if (!built) {
      // The main query reads new_transfers, which reads input: the lock bound is set before any
      // insert can wait. The other parts run after, in the order written.
      built = statement((v) => sql`
        with input as (
               select * from ${recordset(v.transfers, TRANSFER_INPUT, 'r')}
               where set_config('lock_timeout', ${v.lockTimeout}, true) is not null
                 and (not r.guarded or ${guard.condition({
                   organizationId: sql.ref('r.organization_id'),
                   entityId: sql.ref('r.entity_id'),
                   quoteOptionId: sql.ref('r.quote_option_id'),
                   destinationType: sql.ref('r.destination_type'),
                   destinationId: sql.ref('r.destination_id'),
                   destinationVersion: sql.ref('r.destination_version'),
                 })})
             ),
             new_transfers as (
               insert into transfers (${sql.raw(TRANSFER_NAMES)})
               select ${sql.raw(TRANSFER_NAMES)} from input order by quote_option_id
               returning id
             ),
             new_legs as (${insertRows('transfer_legs', v.legs, LEG_COLUMNS)}),
             new_items as (${insertRows('transfer_events', v.items, ITEM_COLUMNS)})
             ${sql.join(parts.map((part, i) => sql`, ${sql.raw(`part_${i}`)} as (${part.sql(v[`part${i}`])})`), sql``)}
        select count(*) from new_transfers`,
        // The guard's lookups must become index scans as the tables grow from nothing (platform/db/guard.ts).
        { planFirstRuns: GUARDED_PLANNED_RUNS },
      );
      this.#creationStatements.set(shape, built);
    }
    return built;
  }

  /** Which of these quote options a transfer has (concurrent reads share a statement). */
  takenOptions(optionIds: string[]): Promise<Set<string>> {
    return Promise.all(optionIds.map((id) => this.#takenOption.submit(id))).then((found) => new Set(found.filter((id): id is string => id !== undefined)));
  }

  /** The transfer with its legs and timeline in one round trip; undefined when not this organization's. */
  async detail(organizationId: string | null, id: string, trx?: Transaction<any>): Promise<TransferDetailRow | undefined> {
    let q = this.#on(trx)
      .selectFrom('transfers as t')
      .selectAll('t')
      .select([
        LEGS_OF_T.as('legs'),
        sql<TimelineRow[]>`(select coalesce(json_agg(${EVENT_JSON} order by e.sequence), '[]'::json) from transfer_events e where e.transfer_id = t.id)`.as('timeline'),
      ])
      .where('t.id', '=', id);
    if (organizationId) q = q.where('t.organization_id', '=', organizationId);
    const row = (await q.executeTakeFirst());
    if (!row) return undefined;
    return { ...row, legs: row.legs.map(reviveLeg), timeline: row.timeline.map(reviveEvent) };
  }

  /** The stored API view as JSON text (and the status, which decides whether funding instructions join it). */
  async view(organizationId: string | null, id: string): Promise<ViewRow | undefined> {
    const query = organizationId ? CompiledQuery.raw(this.#viewSql.own, [id, organizationId]) : CompiledQuery.raw(this.#viewSql.any, [id]);
    return (await this.#db.executeQuery<ViewRow>(query)).rows[0];
  }

  /** Locks the transfer row for the rest of the transaction (every change starts here). */
  async lock(trx: Transaction<any>, id: string, organizationId?: string): Promise<TransferRow | undefined> {
    let q = (trx as Transaction<Tables>).selectFrom('transfers').selectAll().where('id', '=', id);
    if (organizationId) q = q.where('organization_id', '=', organizationId);
    return q.forUpdate().executeTakeFirst();
  }

  /** The transfer with its legs in one round trip (what every engine step starts from). */
  async findWithLegs(id: string): Promise<(TransferRow & { legs: LegRow[] }) | undefined> {
    return (await this.findManyWithLegs([id]))[0];
  }

  /** Several transfers with their legs in one round trip (a batch of engine steps); unknown ids are left out. */
  async findManyWithLegs(ids: string[]): Promise<Array<TransferRow & { legs: LegRow[] }>> {
    if (!ids.length) return [];
    const rows = await this.#withLegs.run(this.#db, { ids });
    return rows.map((row) => ({ ...row, legs: row.legs.map(reviveLeg) }));
  }

  /**
   * Locks several transfers for the rest of the transaction, in id order (two transactions
   * locking overlapping sets then wait for each other instead of deadlocking); answers each
   * one's status and version, which tell whether a row read before is still the row.
   */
  async lockVersions(trx: Transaction<any>, ids: string[]): Promise<Array<Pick<TransferRow, 'id' | 'status' | 'version'>>> {
    if (!ids.length) return [];
    return this.#locked.run(trx, { ids });
  }

  async find(id: string, trx?: Transaction<any>): Promise<TransferRow | undefined> {
    return this.#on(trx).selectFrom('transfers').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async legs(transferId: string, trx?: Transaction<any>): Promise<LegRow[]> {
    return this.#on(trx).selectFrom('transfer_legs').selectAll().where('transfer_id', '=', transferId).orderBy('position').execute();
  }

  async legsOf(transferIds: string[]): Promise<LegRow[]> {
    if (!transferIds.length) return [];
    return this.#db.selectFrom('transfer_legs').selectAll().where('transfer_id', 'in', transferIds).orderBy('transfer_id').orderBy('position').execute();
  }

  /**
   * A change's write: the transfer's new state, its timeline item and, for a leg change, the
   * leg's new state, in one statement (every change writes them together, and a round trip each
   * was most of a change's statements).
   */
  async updateWithTimeline(
    trx: Transaction<any>,
    id: string,
    patch: Partial<Omit<TransferRow, 'id' | 'organization_id' | 'created_at'>>,
    item: NewTimelineRow,
    at: Date,
    leg?: { id: string; patch: LegPatch },
  ): Promise<TransferRow> {
    const withItem = (trx as Transaction<Tables>).with('timeline_item', (qb) => qb.insertInto('transfer_events').values({ ...item, occurred_at: at }).returning('id'));
    if (!leg) return withItem.updateTable('transfers').set(patch as never).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
    const { changed_legs: changed, ...row } = await withItem
      .with('changed_leg', (qb) => qb.updateTable('transfer_legs').set(leg.patch as never).where('id', '=', leg.id).where('transfer_id', '=', id).returning('id'))
      .updateTable('transfers')
      .set(patch as never)
      .where('id', '=', id)
      .returningAll()
      .returning(sql<number>`(select count(*)::int from changed_leg)`.as('changed_legs'))
      .executeTakeFirstOrThrow();
    // The statement succeeds whether or not the leg matched; a change to no leg must not commit.
    if (changed !== 1) throw new Error(`transfer ${id} has no leg ${leg.id}`);
    return row;
  }

  /**
   * updateWithTimeline() for changes to several locked transfers, in one statement: every
   * timeline item, every changed leg as it now is, and every transfer as it now is (the
   * columns a change writes). Each transfer and leg appears once, in its final state.
   */
  async writeChanges(trx: Transaction<any>, changes: { items: Array<NewTimelineRow & { occurred_at: Date }>; legs: LegRow[]; transfers: TransferRow[] }): Promise<void> {
    const { items, legs, transfers } = changes;
    if (!transfers.length) return;
    const [counts] = await WRITE_CHANGES.run(trx, {
      items: encodeRows(items, ITEM_COLUMNS),
      legs: encodeRows(legs, LEG_CHANGE_COLUMNS),
      legIds: legs.map((l) => l.id),
      transferIds: transfers.map((t) => t.id),
      // Views are JSON this process made: sent as the documents they are.
      transfers: encodeRows(
        transfers.map((t) => ({ ...t, api_view: t.api_view === null ? null : new JsonText(t.api_view) })),
        TRANSFER_CHANGE_COLUMNS,
      ),
    });
    // The statement succeeds whatever matched; a change to a row that is not there must not commit.
    if (counts!.transfers !== transfers.length || counts!.legs !== legs.length) {
      throw new Error(`changes to ${transfers.length} transfer(s) and ${legs.length} leg(s) matched ${counts!.transfers} and ${counts!.legs}`);
    }
  }

  /**
   * writeChanges() outside a transaction, for transfers whose current version the caller knows:
   * one statement that writes everything, with the `alongside` parts (their events), or nothing
   * at all (a guard refusal, isGuardRefusal) when a transfer is no longer at its expected version,
   * the guard's condition fails, or a change matches no row.
   */
  async writeChangesGuarded(
    changes: { items: Array<NewTimelineRow & { occurred_at: Date }>; legs: LegRow[]; transfers: TransferRow[] },
    options: { expectedVersions: Map<string, number>; guard: ChangeGuard; alongside: StatementPart[] },
  ): Promise<void> {
    const { items, legs, transfers } = changes;
    if (!transfers.length) return;
    const values: Record<string, unknown> = {
      items: encodeRows(items, ITEM_COLUMNS),
      legs: encodeRows(legs, LEG_CHANGE_COLUMNS),
      legIds: legs.map((l) => l.id),
      transferIds: transfers.map((t) => t.id),
      transfers: encodeRows(
        transfers.map((t) => ({ ...t, api_view: t.api_view === null ? null : new JsonText(t.api_view), expected_version: options.expectedVersions.get(t.id) })),
        GUARDED_TRANSFER_CHANGE_COLUMNS,
      ),
      transferCount: transfers.length,
      legCount: legs.length,
    };
    options.alongside.forEach((part, i) => (values[`part${i}`] = part.rows));
    await this.#guardedChangeStatement(options.guard, options.alongside).run(this.#db, values);
  }

  #guardedChangeStatement(guard: ChangeGuard, parts: StatementPart[]): Statement<Record<string, unknown>, unknown> {
    const shape = [guard.name, ...parts.map((p) => p.name)].join(',');
    let built = this.#guardedChangeStatements.get(shape);
    if (!built) {
      built = statement(
        (v) => sql`
          with changed_transfers as (
                 update transfers as t set ${TRANSFER_CHANGE_SET}
                   from ${recordset(v.transfers, GUARDED_TRANSFER_CHANGE_COLUMNS, 'c')}
                  where t.id = c.id and t.id = any(${v.transferIds}::uuid[]) and t.version = c.expected_version
                    and ${guard.condition({ organizationId: sql.ref('t.organization_id') })}
                 returning t.id
               ),
               new_items as (${insertRows('transfer_events', v.items, ITEM_COLUMNS)}),
               changed_legs as (${updateLegs(v.legs, v.legIds)})
               ${sql.join(parts.map((part, i) => sql`, ${sql.raw(`part_${i}`)} as (${part.sql(v[`part${i}`])})`), sql``)}
          select (select count(*) from changed_transfers) = ${v.transferCount}::int and (select count(*) from changed_legs) = ${v.legCount}::int
                 or corridor_refuse('transfer changed meanwhile') as written`,
        // The guard's lookups must become index scans as the tables grow from nothing (platform/db/guard.ts).
        { planFirstRuns: GUARDED_PLANNED_RUNS },
      );
      this.#guardedChangeStatements.set(shape, built);
    }
    return built;
  }

  async list(filter: TransferFilter, limit: number, cursor: Cursor | null): Promise<{ rows: TransferRow[]; total: number }> {
    let base = this.#db.selectFrom('transfers');
    if (filter.organizationId !== null) base = base.where('organization_id', '=', filter.organizationId);
    if (filter.status) base = base.where('status', '=', filter.status);
    if (filter.entityId) base = base.where('entity_id', '=', filter.entityId);
    if (filter.createdFrom) base = base.where('created_at', '>=', ceilToMillisecond(filter.createdFrom));
    if (filter.createdTo) base = base.where('created_at', '<', ceilToMillisecond(filter.createdTo));
    let page = base.selectAll();
    if (cursor) {
      const at = new Date(cursor.createdAt);
      page = page.where((eb) => eb.or([eb('created_at', '>', at), eb.and([eb('created_at', '=', at), eb('id', '>', cursor.id)])]));
    }
    const [rows, count] = await Promise.all([
      page.orderBy('created_at').orderBy('id').limit(limit + 1).execute(),
      base.select(sql<string>`count(*)`.as('n')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.n) };
  }

  /**
   * Transfers waiting in PENDING_SETUP, oldest first, after `after` (a page of them; null for
   * the first). A transfer never changes while it waits there, so updated_at is when it was created.
   * The statuses here are literals, not parameters, so that a prepared statement's generic plan
   * can use the partial index of engine-owned transfers (with a parameter it scanned the table).
   */
  async pendingSetup(after: { updated_at: Date; id: string } | null, limit: number): Promise<Array<Pick<TransferRow, 'id' | 'updated_at'>>> {
    return after ? this.#pendingAfter.run(this.#db, { at: after.updated_at, id: after.id, limit }) : this.#pendingFirst.run(this.#db, { limit });
  }

  #pendingSetupQuery() {
    return this.#db.selectFrom('transfers').select(['id', 'updated_at']).where('status', '=', sql.lit<TransferStatus>('PENDING_SETUP')).orderBy('updated_at').orderBy('id');
  }

  /** Transfers the engine is responsible for moving (setup or execution), oldest change first. */
  async engineOwned(updatedBefore: Date, limit: number): Promise<Array<Pick<TransferRow, 'id' | 'status'>>> {
    return this.#db
      .selectFrom('transfers')
      .select(['id', 'status'])
      .where('status', 'in', [sql.lit<TransferStatus>('PENDING_SETUP'), sql.lit<TransferStatus>('IN_PROGRESS')])
      .where('updated_at', '<', updatedBefore)
      .orderBy('updated_at')
      .limit(limit)
      .execute();
  }
}
