import { sql } from 'kysely';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import { Batcher, lookupBatcher } from '../platform/batch.ts';
import { encodeRows, recordset } from '../platform/db/recordset.ts';
import { statement } from '../platform/db/statement.ts';
import { GUARDED_PLANNED_RUNS, unless } from '../platform/db/guard.ts';

export type OptionStatus = 'OPEN' | 'USED' | 'EXPIRED';
export type DestinationType = 'FIAT_ACCOUNT' | 'CRYPTO_WALLET';

/** An option's status with an elapsed expiry read as EXPIRED, by the database clock. */
const EFFECTIVE_STATUS = sql<OptionStatus>`case when o.status = 'OPEN' and o.expires_at <= now() then 'EXPIRED' else o.status end`.as('effective_status');

export interface QuoteRow {
  id: string;
  organization_id: string;
  entity_id: string;
  fixed_side: 'FROM' | 'TO';
  amount: string;
  from_rail: unknown;
  to_rail: unknown;
  destination_type: DestinationType | null;
  destination_id: string | null;
  destination_version: number | null;
  active_only: boolean;
  advisories: unknown;
  created_at: Date;
}

export interface QuoteOptionRow {
  id: string;
  quote_id: string;
  organization_id: string;
  rank: number;
  from_asset: string;
  to_asset: string;
  from_amount: string;
  to_amount: string;
  rate: string;
  fees: unknown;
  total_fee: string;
  fee_currency: string;
  eta_seconds: number;
  legs: unknown;
  expires_at: Date;
  status: OptionStatus;
  created_at: Date;
}

/** An option joined with its quote, as the transfer engine reads it. */
export type OptionWithQuoteRow = QuoteOptionRow &
  Pick<QuoteRow, 'entity_id' | 'fixed_side' | 'amount' | 'from_rail' | 'to_rail' | 'destination_type' | 'destination_id' | 'destination_version'> & {
    /** The status with an elapsed expiry read as EXPIRED, by the database clock. */
    effective_status: OptionStatus;
  };

interface Tables {
  quotes: WithDefaults<QuoteRow, 'created_at' | 'active_only' | 'advisories'>;
  quote_options: WithDefaults<QuoteOptionRow, 'created_at' | 'status'>;
}

type Db = Kysely<any> | Transaction<any>;

type OptionKey = { organizationId: string; optionId: string };

/** An option as the quote engine makes it; the rest of its row is the quote's or the database's. */
export type NewOption = Omit<QuoteOptionRow, 'created_at' | 'status' | 'expires_at' | 'quote_id' | 'organization_id'>;
type NewQuote = { quote: Omit<QuoteRow, 'created_at'>; options: NewOption[]; ttlSeconds: number; guarded: boolean };

const QUOTE_COLUMNS = {
  id: 'uuid',
  organization_id: 'uuid',
  entity_id: 'uuid',
  fixed_side: 'text',
  amount: 'numeric',
  from_rail: 'jsonb',
  to_rail: 'jsonb',
  destination_type: 'text',
  destination_id: 'uuid',
  destination_version: 'integer',
  active_only: 'boolean',
  advisories: 'jsonb',
} as const;

const OPTION_COLUMNS = {
  id: 'uuid',
  quote_id: 'uuid',
  organization_id: 'uuid',
  rank: 'integer',
  from_asset: 'text',
  to_asset: 'text',
  from_amount: 'numeric',
  to_amount: 'numeric',
  rate: 'text',
  fees: 'json',
  total_fee: 'numeric',
  fee_currency: 'text',
  eta_seconds: 'integer',
  legs: 'json',
} as const;
const OPTION_NAMES = Object.keys(OPTION_COLUMNS).join(', ');
const OPTION_INPUT = { ...OPTION_COLUMNS, ttl_seconds: 'integer' } as const;
const QUOTE_NAMES = Object.keys(QUOTE_COLUMNS).join(', ');
/** A quote as the insert reads it: its columns, and whether its guard applies (QuoteGuard). */
const QUOTE_INPUT = { ...QUOTE_COLUMNS, guarded: 'boolean' } as const;

/**
 * What a quote made from facts this process read earlier must still find true when it is
 * written (platform/db/guard.ts), as a condition on the quote's row (`q`, QUOTE_INPUT).
 */
export type QuoteGuard = (q: { organizationId: RawBuilder<unknown>; entityId: RawBuilder<unknown>; destinationType: RawBuilder<unknown>; destinationId: RawBuilder<unknown>; destinationVersion: RawBuilder<unknown> }) => RawBuilder<boolean>;

// now() is the statement's start: the same instant for every quote and option it writes.
const insertQuotes = (guard: QuoteGuard) => statement<{ quotes: string; options: string }, { created_at: Date }>(
  (v) => sql`
    with new_quotes as (
           insert into quotes (${sql.raw(QUOTE_NAMES)})
           select ${sql.raw(QUOTE_NAMES)} from ${recordset(v.quotes, QUOTE_INPUT, 'r')}
            where not r.guarded or ${guard({
              organizationId: sql.ref('r.organization_id'),
              entityId: sql.ref('r.entity_id'),
              destinationType: sql.ref('r.destination_type'),
              destinationId: sql.ref('r.destination_id'),
              destinationVersion: sql.ref('r.destination_version'),
            })}
         ),
         new_options as (
           insert into quote_options (${sql.raw(OPTION_NAMES)}, expires_at)
           select ${sql.raw(OPTION_NAMES)}, now() + make_interval(secs => r.ttl_seconds) from ${recordset(v.options, OPTION_INPUT, 'r')}
         )
    select now()::timestamptz(3) as created_at`,
  // The guard's lookups must become index scans as the tables grow from nothing (platform/db/guard.ts).
  { planFirstRuns: GUARDED_PLANNED_RUNS },
);

export class QuoteRepository {
  readonly #db: Kysely<Tables>;
  readonly #inserts = new Batcher<NewQuote, Date>((batch) => this.#insertMany(batch));
  readonly #insertStatement: ReturnType<typeof insertQuotes>;
  // Every transfer creation reads its option; concurrent reads outside a transaction share a statement.
  readonly #optionsStatement = statement<{ ids: string[]; organizations: string[] }, OptionWithQuoteRow>((v) =>
    this.#optionQuery(this.#db).where(sql<boolean>`o.id = any(${v.ids}::uuid[]) and (o.id, o.organization_id) in (select * from unnest(${v.ids}::uuid[], ${v.organizations}::uuid[]))`),
  );
  readonly #options = lookupBatcher<OptionKey, OptionWithQuoteRow>(
    (keys) => this.#optionsStatement.run(this.#db, { ids: keys.map((k) => k.optionId), organizations: keys.map((k) => k.organizationId) }),
    (k) => `${k.organizationId}/${k.optionId}`,
    (row) => `${row.organization_id}/${row.id}`,
  );
  /** `guard` is what a guarded quote must find true (QuoteGuard); an unguarded one is written as it is. Without one, no guarded quote is written. */
  constructor(db: Kysely<any>, guard: QuoteGuard = () => unless(sql<boolean>`false`, 'no guard')) {
    this.#db = db;
    this.#insertStatement = insertQuotes(guard);
  }

  /** A guard's condition (platform/db/guard.ts): the organization's option is still OPEN and unexpired, by the database clock. */
  openOptionCondition(refs: { id: RawBuilder<unknown>; organizationId: RawBuilder<unknown> }): RawBuilder<boolean> {
    return sql<boolean>`coalesce((select true from quote_options guard_option where guard_option.id = ${refs.id} and guard_option.organization_id = ${refs.organizationId} and guard_option.status = 'OPEN' and guard_option.expires_at > now() limit 1), false)`;
  }

  /**
   * Stores a quote and its options in one statement (all or nothing, with no transaction to open
   * and commit); created_at comes from the database clock, the same instant for the quote and its
   * options. Quotes made at the same time are stored by one statement.
   */
  /**
   * Writes the quote and its options (with concurrent quotes, in one statement). A `guarded`
   * quote is written only if the guard still holds; otherwise nothing is, and the error says so
   * (isGuardRefusal).
   */
  async insert(quote: Omit<QuoteRow, 'created_at'>, options: NewOption[], ttlSeconds: number, guarded = false): Promise<{ quote: QuoteRow; options: QuoteOptionRow[] }> {
    const createdAt = await this.#inserts.submit({ quote, options, ttlSeconds, guarded });
    return {
      quote: { ...quote, created_at: createdAt },
      options: options
        .map((o) => ({ ...o, quote_id: quote.id, organization_id: quote.organization_id, status: 'OPEN' as const, created_at: createdAt, expires_at: new Date(createdAt.getTime() + ttlSeconds * 1000) }))
        .sort((a, b) => a.rank - b.rank),
    };
  }

  async #insertMany(batch: NewQuote[]): Promise<Date[]> {
    const quotes = batch.map((b) => ({ ...b.quote, guarded: b.guarded }));
    const options = batch.flatMap((b) => b.options.map((o) => ({ ...o, quote_id: b.quote.id, organization_id: b.quote.organization_id, ttl_seconds: b.ttlSeconds })));
    const [row] = await this.#insertStatement.run(this.#db, { quotes: encodeRows(quotes, QUOTE_INPUT), options: encodeRows(options, OPTION_INPUT) });
    return batch.map(() => row!.created_at);
  }

  async find(organizationId: string, id: string): Promise<{ quote: QuoteRow; options: QuoteOptionRow[] } | null> {
    const quote = await this.#db.selectFrom('quotes').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    if (!quote) return null;
    const rows = await this.#db
      .selectFrom('quote_options as o')
      .selectAll('o')
      .select(EFFECTIVE_STATUS)
      .where('o.quote_id', '=', id)
      .orderBy('o.rank')
      .execute();
    // The expiry job runs once a minute; a read must not show an elapsed option as OPEN meanwhile.
    const options = rows.map(({ effective_status, ...row }) => ({ ...row, status: effective_status }));
    return { quote, options };
  }

  async findOption(organizationId: string, optionId: string, db?: Db): Promise<OptionWithQuoteRow | undefined> {
    if (!db || db === this.#db) return this.#options.submit({ organizationId, optionId });
    return this.#optionQuery(db).where('o.organization_id', '=', organizationId).where('o.id', '=', optionId).executeTakeFirst();
  }

  #optionQuery(db: Db) {
    return (db as unknown as Kysely<Tables>)
      .selectFrom('quote_options as o')
      .innerJoin('quotes as q', 'q.id', 'o.quote_id')
      .selectAll('o')
      .select([
        'q.entity_id',
        'q.fixed_side',
        'q.amount',
        'q.from_rail',
        'q.to_rail',
        'q.destination_type',
        'q.destination_id',
        'q.destination_version',
        EFFECTIVE_STATUS,
      ]);
  }

  /** Marks OPEN options past their expiry as EXPIRED; returns how many moved. */
  async expireDue(): Promise<number> {
    const result = await this.#db
      .updateTable('quote_options')
      .set({ status: 'EXPIRED' })
      // A literal, not a parameter: a prepared statement's generic plan can then use the partial index of open options.
      .where('status', '=', sql.lit('OPEN'))
      .where('expires_at', '<=', sql<Date>`now()`)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }
}
