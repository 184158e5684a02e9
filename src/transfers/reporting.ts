// The transfers domain's read interface for reporting: read-only queries over its own tables
// (transfers, transfer_legs, transfer_events) in the shapes reports write out. The SQL lives here
// because these tables are this domain's (docs/ARCHITECTURE.md "Layers"); src/reports asks for
// rows and knows nothing of the tables. Every query is filtered by organization and pages by a
// keyset, so a report of any size is read in bounded batches and memory stays flat.
//
// Timestamps are formatted by the database (ISO 8601 UTC with milliseconds) so that a million
// rows do not each go through Date parsing and formatting on the way to the file.
import { sql } from 'kysely';
import type { Kysely, RawBuilder } from 'kysely';
import type pg from 'pg';
import { afterLastRow, keysetPages } from '../platform/paging.ts';
import type { TransferStatus } from './state-machine.ts';

const iso = (column: RawBuilder<unknown>) => sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const ref = (name: string) => sql.ref(name);

/**
 * Which transfers a report selects: the fields these queries read (a report's normalized filters
 * satisfy it, so this module needs nothing from src/reports). The window is half-open [from, to),
 * ISO 8601 UTC. statuses null puts no condition on status, except in the message-group (iso)
 * queries, which select only the statuses named.
 */
export interface TransferReportFilter {
  from: string;
  to: string;
  /** CREATED_AT: transfers created in the window. STATUS_EVENT_AT: by their latest STATUS event in the window. */
  timestampBasis: 'CREATED_AT' | 'STATUS_EVENT_AT';
  /** By the destination rail's type. */
  assetScope: 'ALL' | 'FIAT' | 'CRYPTO';
  originalMessageId: string | null;
  statuses: readonly TransferStatus[] | null;
}

export interface Counts {
  matchingTransferCount: number;
  outputRowCount: number;
}

export interface ActivityRow {
  id: string;
  created_at: string;
  updated_at: string;
  status: string;
  blocking_party: string;
  status_reason: string | null;
  destination_relationship: 'SELF' | 'THIRD_PARTY';
  client_reference: string | null;
  entity_id: string;
  from_rail: Record<string, unknown>;
  to_rail: Record<string, unknown>;
  source_asset: string;
  destination_asset: string;
  quoted_source_amount: string;
  quoted_destination_amount: string;
  quoted_rate: string;
  actual_source_amount: string | null;
  actual_destination_amount: string | null;
  fee_currency: string;
  quoted_fee_total: string;
  actual_fee_total: string | null;
  original_message_id: string | null;
  original_end_to_end_id: string | null;
}

export interface ActivityLegRow {
  transfer_id: string;
  position: number;
  kind: string;
  provider_name: string;
  provider_reference: string | null;
  status: string;
  progress_stage: string;
  from_asset: string;
  to_asset: string;
  rail: Record<string, unknown> | null;
  quoted_amount_in: string;
  quoted_amount_out: string;
  actual_amount_out: string | null;
  updated_at: string;
}

export interface StatusEventRow {
  sequence: string;
  occurred_at: string;
  event_id: string;
  transfer_id: string;
  client_reference: string | null;
  from_status: string | null;
  to_status: string;
  blocking_party: string;
  reason: string | null;
  version: number;
  source_asset: string;
  destination_asset: string;
}

export interface IsoEntryRow {
  transfer_id: string;
  created_at: string;
  event_id: string;
  status: TransferStatus;
  reason: string | null;
  sort_key: string;
  source_system: string | null;
  original_message_id: string | null;
  original_message_name_id: string | null;
  original_payment_information_id: string | null;
  original_instruction_id: string | null;
  original_end_to_end_id: string | null;
}

export interface ActivityCursor {
  createdAt: string;
  id: string;
}
export interface EventCursor {
  occurredAt: string;
  sequence: string;
}
export interface IsoCursor {
  sortKey: string;
  createdAt: string;
  id: string;
}

const PAYMENT_REFERENCE_FIELDS = [
  'sourceSystem', 'originalMessageId', 'originalMessageNameId', 'originalPaymentInformationId', 'originalInstructionId', 'originalEndToEndId',
] as const;

export interface TransferReportingOptions {
  /**
   * PostgreSQL: stream large reports from one server-side cursor inside a read-only snapshot,
   * on a connection of this pool. Without it they are read in keyset pages, each its own short
   * query (PGlite, where a transaction held for the whole report would hold its only session).
   */
  cursorPool?: pg.Pool | null;
}

/** The fields of a status-history record, in this order (then the event's sequence, for paging). */
export const STATUS_HISTORY_FIELDS = [
  'occurred_at', 'event_id', 'transfer_id', 'client_reference', 'from_status', 'to_status', 'blocking_party', 'reason', 'version',
  'source_asset', 'destination_asset',
] as const;
export type StatusHistoryRecord = [...Array<string | number | null>];

/**
 * PostgreSQL's ISO text for a timestamp(3) with time zone in a UTC session ("2026-03-01 00:00:01.5+00",
 * trailing zeros of the fraction dropped) as the report writes it ("2026-03-01T00:00:01.500Z"),
 * which is what to_char produces in the other queries. Done here for the whole-report cursor:
 * to_char was 11% of the backend's CPU serving it (a CPU profile of the cursor on 1,000,000 rows),
 * and that backend, not the formatting, is what the generator waits on.
 */
export function isoFromPgUtc(text: string): string {
  const n = text.length;
  if (n < 22 || n > 26 || text.charCodeAt(10) !== 32 || !text.endsWith('+00')) throw new Error(`unexpected timestamp text from PostgreSQL: ${text}`);
  const fraction = n === 22 ? '.000' : text.slice(19, n - 3).padEnd(4, '0');
  return `${text.slice(0, 10)}T${text.slice(11, 19)}${fraction}Z`;
}

/**
 * One FETCH from a cursor, as a pg Submittable that keeps each DataRow's decoded fields as the
 * record. pg's own Query parses every row a second time into an array of its own (and runs the
 * type parsers, which for these text columns change nothing): on a million rows that doubled the
 * CPU spent reading from PostgreSQL (1.5 s against 0.75 s). Every cell arrives as text or null;
 * the first is the event's timestamp in PostgreSQL's own text, turned into the report's form here.
 */
class FetchBatch {
  readonly text: string;
  readonly rows: StatusHistoryRecord[] = [];
  readonly done: Promise<StatusHistoryRecord[]>;
  #resolve!: (rows: StatusHistoryRecord[]) => void;
  #reject!: (err: Error) => void;

  constructor(text: string) {
    this.text = text;
    this.done = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }
  submit(connection: { query(text: string): void }) {
    connection.query(this.text);
  }
  handleRowDescription() {}
  handleDataRow(message: { fields: Array<string | null> }) {
    const fields = message.fields;
    fields[0] = isoFromPgUtc(fields[0]!);
    this.rows.push(fields);
  }
  handleCommandComplete() {}
  handleEmptyQuery() {}
  // Also called when the connection is lost mid-query, when no ReadyForQuery follows.
  handleError(err: Error) {
    this.#reject(err);
  }
  handleReadyForQuery() {
    this.#resolve(this.rows);
  }
}

export class TransferReporting {
  readonly #db: Kysely<any>;
  readonly #cursorPool: pg.Pool | null;

  constructor(db: Kysely<any>, options: TransferReportingOptions = {}) {
    this.#db = db;
    this.#cursorPool = options.cursorPool ?? null;
  }

  // ---- conditions shared by every profile ------------------------------------------------

  /** Conditions on the transfer row t: organization, asset scope, message group. */
  #transferConditions(organizationId: string, f: TransferReportFilter): RawBuilder<unknown>[] {
    const conditions: RawBuilder<unknown>[] = [sql`t.organization_id = ${organizationId}`];
    if (f.assetScope !== 'ALL') conditions.push(sql`t.to_rail->>'type' = ${f.assetScope}`);
    if (f.originalMessageId !== null) conditions.push(sql`t.original_message_id = ${f.originalMessageId}`);
    return conditions;
  }

  #statusIn(column: string, statuses: readonly string[] | null): RawBuilder<unknown>[] {
    return statuses ? [sql`${ref(column)} IN (${sql.join(statuses.map((s) => sql`${s}`))})`] : [];
  }

  #windowOn(column: string, f: TransferReportFilter): RawBuilder<unknown>[] {
    return [sql`${ref(column)} >= ${f.from}::timestamptz`, sql`${ref(column)} < ${f.to}::timestamptz`];
  }

  /** Latest STATUS event of each transfer inside the window (ties broken by commit order). */
  #latestInWindow(organizationId: string, f: TransferReportFilter): RawBuilder<unknown> {
    return sql`SELECT DISTINCT ON (e.transfer_id) e.transfer_id, e.id AS event_id, e.to_status, e.blocking_party, e.reason, e.occurred_at
      FROM transfer_events e
      WHERE e.organization_id = ${organizationId} AND e.kind = 'STATUS' AND ${sql.join(this.#windowOn('e.occurred_at', f), sql` AND `)}
      ORDER BY e.transfer_id, e.occurred_at DESC, e.sequence DESC`;
  }

  // ---- transfer activity -------------------------------------------------------------------

  /** The FROM/WHERE of activity reports, before paging. Exposes t (transfer) and, by basis, the status columns. */
  #activitySelection(organizationId: string, f: TransferReportFilter): { from: RawBuilder<unknown>; where: RawBuilder<unknown>[]; status: RawBuilder<unknown> } {
    if (f.timestampBasis === 'CREATED_AT') {
      return {
        from: sql`transfers t`,
        where: [...this.#transferConditions(organizationId, f), ...this.#windowOn('t.created_at', f), ...this.#statusIn('t.status', f.statuses)],
        status: sql`t.status, t.blocking_party, t.status_reason, ${iso(sql`t.updated_at`)} AS updated_at`,
      };
    }
    return {
      from: sql`(${this.#latestInWindow(organizationId, f)}) l JOIN transfers t ON t.id = l.transfer_id`,
      where: [...this.#transferConditions(organizationId, f), ...this.#statusIn('l.to_status', f.statuses)],
      status: sql`l.to_status AS status, l.blocking_party, l.reason AS status_reason, ${iso(sql`l.occurred_at`)} AS updated_at`,
    };
  }

  async countActivity(organizationId: string, f: TransferReportFilter, perLeg: boolean): Promise<Counts> {
    const s = this.#activitySelection(organizationId, f);
    const legCount = perLeg ? sql`(SELECT count(*) FROM transfer_legs tl WHERE tl.transfer_id = t.id)` : sql`1`;
    const { rows } = await sql<{ transfers: string; rows: string | null }>`
      SELECT count(*) AS transfers, sum(${legCount}) AS rows FROM ${s.from} WHERE ${sql.join(s.where, sql` AND `)}`.execute(this.#db);
    return { matchingTransferCount: Number(rows[0]?.transfers ?? 0), outputRowCount: Number(rows[0]?.rows ?? 0) };
  }

  async activityPage(organizationId: string, f: TransferReportFilter, after: ActivityCursor | null, limit: number): Promise<ActivityRow[]> {
    const s = this.#activitySelection(organizationId, f);
    const where = [...s.where];
    if (after) where.push(sql`(t.created_at, t.id) > (${after.createdAt}::timestamptz, ${after.id}::uuid)`);
    const { rows } = await sql<ActivityRow>`
      SELECT t.id, ${iso(sql`t.created_at`)} AS created_at, ${s.status},
        t.destination_relationship, t.client_reference, t.entity_id, t.from_rail, t.to_rail, t.source_asset, t.destination_asset,
        t.quoted_source_amount, t.quoted_destination_amount, t.quoted_rate, t.actual_source_amount, t.actual_destination_amount,
        t.fee_currency, t.quoted_fee_total, t.actual_fee_total,
        t.payment_references->>'originalMessageId' AS original_message_id,
        t.payment_references->>'originalEndToEndId' AS original_end_to_end_id
      FROM ${s.from}
      WHERE ${sql.join(where, sql` AND `)}
      ORDER BY t.created_at, t.id
      LIMIT ${limit}`.execute(this.#db);
    return rows;
  }

  /** Legs of the given transfers, in leg order. Only customer-safe leg columns are read. */
  async legsOf(transferIds: string[]): Promise<ActivityLegRow[]> {
    if (!transferIds.length) return [];
    const { rows } = await sql<ActivityLegRow>`
      SELECT l.transfer_id, l.position, l.kind, l.provider_name, l.provider_reference, l.status, l.progress_stage,
        l.from_asset, l.to_asset, l.rail, l.quoted_amount_in, l.quoted_amount_out, l.actual_amount_out, ${iso(sql`l.updated_at`)} AS updated_at
      FROM transfer_legs l
      WHERE l.transfer_id IN (${sql.join(transferIds.map((id) => sql`${id}::uuid`))})
      ORDER BY l.transfer_id, l.position`.execute(this.#db);
    return rows;
  }

  // ---- status history ----------------------------------------------------------------------

  #historyConditions(organizationId: string, f: TransferReportFilter): { join: boolean; where: RawBuilder<unknown>[] } {
    const join = f.assetScope !== 'ALL' || f.originalMessageId !== null;
    const where = [
      sql`e.organization_id = ${organizationId}`,
      sql`e.kind = 'STATUS'`,
      ...this.#windowOn('e.occurred_at', f),
      ...this.#statusIn('e.to_status', f.statuses),
      ...(join ? this.#transferConditions(organizationId, f) : []),
    ];
    return { join, where };
  }

  async countStatusHistory(organizationId: string, f: TransferReportFilter): Promise<Counts> {
    const c = this.#historyConditions(organizationId, f);
    const { rows } = await sql<{ transfers: string; rows: string }>`
      SELECT count(DISTINCT e.transfer_id) AS transfers, count(*) AS rows
      FROM transfer_events e ${c.join ? sql`JOIN transfers t ON t.id = e.transfer_id` : sql``}
      WHERE ${sql.join(c.where, sql` AND `)}`.execute(this.#db);
    return { matchingTransferCount: Number(rows[0]?.transfers ?? 0), outputRowCount: Number(rows[0]?.rows ?? 0) };
  }

  /**
   * The status-history query without paging: shared by the generator and the benchmark's COPY.
   * occurred_at is in the report's ISO form, or with rawTimestamp as PostgreSQL's own text (the
   * whole-report cursor formats it itself: see isoFromPgUtc).
   */
  statusHistoryQuery(organizationId: string, f: TransferReportFilter, after: EventCursor | null, limit: number | null, rawTimestamp = false): RawBuilder<StatusEventRow> {
    const c = this.#historyConditions(organizationId, f);
    const where = [...c.where, sql`t.id = e.transfer_id`];
    if (after) where.push(sql`(e.occurred_at, e.sequence) > (${after.occurredAt}::timestamptz, ${after.sequence}::bigint)`);
    return sql<StatusEventRow>`
      SELECT ${rawTimestamp ? sql`e.occurred_at` : iso(sql`e.occurred_at`)} AS occurred_at, e.id AS event_id, e.transfer_id, t.client_reference,
        e.from_status, e.to_status, e.blocking_party, e.reason, e.version, t.source_asset, t.destination_asset, e.sequence
      FROM transfer_events e, transfers t
      WHERE ${sql.join(where, sql` AND `)}
      ORDER BY e.occurred_at, e.sequence
      ${limit === null ? sql`` : sql`LIMIT ${limit}`}`;
  }

  async statusHistoryPage(organizationId: string, f: TransferReportFilter, after: EventCursor | null, limit: number): Promise<StatusEventRow[]> {
    return (await this.statusHistoryQuery(organizationId, f, after, limit).execute(this.#db)).rows;
  }

  /**
   * Every status-history record in order (STATUS_HISTORY_FIELDS; keyset pages add the sequence), pageSize at a
   * time, with the next page read ahead. Records are arrays: a million of them are a million
   * fewer objects for the garbage collector.
   */
  async *statusHistoryRecords(organizationId: string, f: TransferReportFilter, pageSize: number): AsyncGenerator<StatusHistoryRecord[]> {
    if (!this.#cursorPool) {
      const pages = keysetPages(
        (after: EventCursor | null) => this.statusHistoryPage(organizationId, f, after, pageSize),
        afterLastRow(pageSize, (last: StatusEventRow) => ({ occurredAt: last.occurred_at, sequence: last.sequence })),
      );
      for await (const page of pages) yield page.map((row) => [...STATUS_HISTORY_FIELDS.map((k) => row[k]), row.sequence]);
      return;
    }
    // One query, as COPY would run it, fetched in batches: no page pays for planning and an
    // index descent of its own, and the whole report reads one consistent snapshot.
    // Only the columns the file shows: the paging sequence would be one more string per row.
    const query = sql`SELECT ${sql.join(STATUS_HISTORY_FIELDS.map((k) => sql.ref(k)))} FROM (${this.statusHistoryQuery(organizationId, f, null, null, true)}) q`.compile(this.#db);
    const client = await this.#cursorPool.connect();
    let open = false;
    try {
      // One round trip. jit: the planner costs a whole-report cursor high enough to JIT-compile it
      // with inlining and optimization: 150–220 ms before the first row while the generator waits,
      // and reading all rows was no faster for it (measured on 1,000,000 rows). TimeZone and
      // DateStyle: the text isoFromPgUtc expects, whatever the server's or role's defaults.
      open = true;
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL jit = off; SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO'");
      await client.query(`DECLARE report_rows NO SCROLL CURSOR FOR ${query.sql}`, query.parameters as unknown[]);
      const fetch = `FETCH FORWARD ${Math.trunc(pageSize)} FROM report_rows`;
      yield* keysetPages(
        () => {
          const batch = new FetchBatch(fetch);
          void client.query(batch as never);
          return batch.done;
        },
        (page: StatusHistoryRecord[]) => (page.length < pageSize ? null : true),
      );
      open = false;
      await client.query('COMMIT');
    } finally {
      if (open) await client.query('ROLLBACK').catch(() => {});
      client.release();
    }
  }

  // ---- pain.002 -----------------------------------------------------------------------------

  /**
   * DECISIONS.md §10: the transfers of the originalMessageId group with at least one STATUS event
   * in the window, each with its latest event in the window. A message group is one customer
   * batch, so its transfers are found by the group index and each looks up its own events.
   */
  #isoSelection(organizationId: string, f: TransferReportFilter): RawBuilder<unknown> {
    return sql`transfers t
      JOIN LATERAL (
        SELECT e.id AS event_id, e.to_status, e.reason, e.occurred_at FROM transfer_events e
        WHERE e.transfer_id = t.id AND e.kind = 'STATUS' AND ${sql.join(this.#windowOn('e.occurred_at', f), sql` AND `)}
        ORDER BY e.occurred_at DESC, e.sequence DESC LIMIT 1
      ) le ON true`;
  }

  #completeReferences(): RawBuilder<unknown> {
    return sql.join(
      PAYMENT_REFERENCE_FIELDS.map((field) => sql`length(coalesce(t.payment_references->>${field}, '')) BETWEEN 1 AND 35`),
      sql` AND `,
    );
  }

  /**
   * Counts of the message group's selection: unsupported counts the transfers whose latest status
   * in the window is one of the given statuses (those the caller's format cannot express; at
   * least one), incomplete the selected ones missing a payment reference.
   */
  async isoCounts(
    organizationId: string,
    f: TransferReportFilter,
    unsupportedStatuses: readonly TransferStatus[],
  ): Promise<Counts & { unsupported: number; incomplete: number; firstUnsupported: string | null; firstIncomplete: string | null }> {
    const statuses = f.statuses ?? [];
    const inSelection = statuses.length ? sql`le.to_status IN (${sql.join(statuses.map((s) => sql`${s}`))})` : sql`false`;
    const unmapped = sql`le.to_status IN (${sql.join(unsupportedStatuses.map((s) => sql`${s}`))})`;
    const { rows } = await sql<{ matching: string; emitted: string; unsupported: string; incomplete: string; first_unsupported: string | null; first_incomplete: string | null }>`
      SELECT count(*) AS matching,
        count(*) FILTER (WHERE ${inSelection}) AS emitted,
        count(*) FILTER (WHERE ${unmapped}) AS unsupported,
        count(*) FILTER (WHERE ${inSelection} AND NOT (${this.#completeReferences()})) AS incomplete,
        min(t.id::text) FILTER (WHERE ${unmapped}) AS first_unsupported,
        min(t.id::text) FILTER (WHERE ${inSelection} AND NOT (${this.#completeReferences()})) AS first_incomplete
      FROM ${this.#isoSelection(organizationId, f)}
      WHERE ${sql.join(this.#transferConditions(organizationId, f), sql` AND `)}`.execute(this.#db);
    const r = rows[0]!;
    return {
      matchingTransferCount: Number(r.matching),
      outputRowCount: Number(r.emitted),
      unsupported: Number(r.unsupported),
      incomplete: Number(r.incomplete),
      firstUnsupported: r.first_unsupported,
      firstIncomplete: r.first_incomplete,
    };
  }

  /** Emitted entries, grouped by original payment information id (the document's nesting). */
  async isoPage(organizationId: string, f: TransferReportFilter, after: IsoCursor | null, limit: number): Promise<IsoEntryRow[]> {
    const statuses = f.statuses ?? [];
    if (!statuses.length) return [];
    const sortKey = sql`coalesce(t.payment_references->>'originalPaymentInformationId', '')`;
    const where = [...this.#transferConditions(organizationId, f), sql`le.to_status IN (${sql.join(statuses.map((s) => sql`${s}`))})`];
    if (after) where.push(sql`(${sortKey}, t.created_at, t.id) > (${after.sortKey}, ${after.createdAt}::timestamptz, ${after.id}::uuid)`);
    const { rows } = await sql<IsoEntryRow>`
      SELECT t.id AS transfer_id, ${iso(sql`t.created_at`)} AS created_at, le.event_id, le.to_status AS status, le.reason, ${sortKey} AS sort_key,
        t.payment_references->>'sourceSystem' AS source_system,
        t.payment_references->>'originalMessageId' AS original_message_id,
        t.payment_references->>'originalMessageNameId' AS original_message_name_id,
        t.payment_references->>'originalPaymentInformationId' AS original_payment_information_id,
        t.payment_references->>'originalInstructionId' AS original_instruction_id,
        t.payment_references->>'originalEndToEndId' AS original_end_to_end_id
      FROM ${this.#isoSelection(organizationId, f)}
      WHERE ${sql.join(where, sql` AND `)}
      ORDER BY ${sortKey}, t.created_at, t.id
      LIMIT ${limit}`.execute(this.#db);
    return rows;
  }

  /** The original message's name (e.g. pain.001.001.03) as the group's transfers recorded it. */
  async originalMessageNameId(organizationId: string, originalMessageId: string): Promise<string | null> {
    const { rows } = await sql<{ name: string | null }>`
      SELECT t.payment_references->>'originalMessageNameId' AS name FROM transfers t
      WHERE t.organization_id = ${organizationId} AND t.original_message_id = ${originalMessageId}
        AND length(coalesce(t.payment_references->>'originalMessageNameId', '')) BETWEEN 1 AND 35
      ORDER BY t.created_at, t.id LIMIT 1`.execute(this.#db);
    return rows[0]?.name ?? null;
  }
}
