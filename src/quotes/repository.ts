import { sql } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';

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

// jsonb columns are written as JSON text; both engines hand them back parsed.
const json = (value: unknown) => JSON.stringify(value);

export class QuoteRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  /**
   * Stores a quote and its options in one statement (all or nothing, with no transaction to open
   * and commit); created_at comes from the database clock, the same instant for the quote and its
   * options.
   */
  async insert(
    quote: Omit<QuoteRow, 'created_at'>,
    options: Array<Omit<QuoteOptionRow, 'created_at' | 'status' | 'expires_at' | 'quote_id' | 'organization_id'>>,
    ttlSeconds: number,
  ): Promise<{ quote: QuoteRow; options: QuoteOptionRow[] }> {
    const quoteRow = { ...quote, from_rail: json(quote.from_rail), to_rail: json(quote.to_rail), advisories: json(quote.advisories) };
    if (!options.length) return { quote: await this.#db.insertInto('quotes').values(quoteRow).returningAll().executeTakeFirstOrThrow(), options: [] };
    const rows = await this.#db
      .with('new_quote', (qb) => qb.insertInto('quotes').values(quoteRow).returning('id'))
      .insertInto('quote_options')
      .values(
        options.map((o) => ({
          ...o,
          quote_id: quote.id,
          organization_id: quote.organization_id,
          fees: json(o.fees),
          legs: json(o.legs),
          // now() is the transaction's start, the same instant as the quote's created_at.
          expires_at: sql<Date>`now() + make_interval(secs => ${ttlSeconds})`,
        })),
      )
      .returningAll()
      .execute();
    return { quote: { ...quote, created_at: rows[0]!.created_at }, options: rows.sort((a, b) => a.rank - b.rank) };
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

  async findOption(organizationId: string, optionId: string, db: Db = this.#db): Promise<OptionWithQuoteRow | undefined> {
    const conn = db as unknown as Kysely<Tables>;
    return conn
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
      ])
      .where('o.organization_id', '=', organizationId)
      .where('o.id', '=', optionId)
      .executeTakeFirst();
  }

  /** OPEN → USED when not expired, atomically; null when the row did not qualify. */
  async claim(trx: Transaction<any>, optionId: string): Promise<boolean> {
    const row = await (trx as Transaction<Tables>)
      .updateTable('quote_options')
      .set({ status: 'USED' })
      .where('id', '=', optionId)
      .where('status', '=', 'OPEN')
      .where('expires_at', '>', sql<Date>`now()`)
      .returning('id')
      .executeTakeFirst();
    return Boolean(row);
  }

  async statusOf(trx: Transaction<any>, optionId: string): Promise<{ status: OptionStatus; expired: boolean } | undefined> {
    return (trx as Transaction<Tables>)
      .selectFrom('quote_options')
      .select(['status', sql<boolean>`expires_at <= now()`.as('expired')])
      .where('id', '=', optionId)
      .executeTakeFirst();
  }

  /** Marks OPEN options past their expiry as EXPIRED; returns how many moved. */
  async expireDue(): Promise<number> {
    const result = await this.#db
      .updateTable('quote_options')
      .set({ status: 'EXPIRED' })
      .where('status', '=', 'OPEN')
      .where('expires_at', '<=', sql<Date>`now()`)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }
}
