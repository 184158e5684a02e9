import { CompiledQuery, sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import type { Cursor } from '../platform/http/pagination.ts';
import { Batcher } from '../platform/batch.ts';

// Any constants work; they only have to be the same in every Corridor process.
const STARTUP_LOCKS = { signingKeys: 7_302_118_432, firstOrganization: 7_302_118_433 } as const;

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  scopes: string[];
  lookup_id: string;
  secret_hash: Buffer;
  prefix: string;
  last_four: string;
  created_by_user_id: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const words = (joined: string): string[] => (joined ? joined.split(' ') : []);

/** What authenticating an API key needs of it (only these columns are read on every request). */
export type ApiKeyCredential = Pick<ApiKeyRow, 'id' | 'organization_id' | 'scopes' | 'secret_hash' | 'revoked_at'> & { organization_features: string[] };

export interface SigningKeyRow {
  kid: string;
  algorithm: string;
  public_jwk: Record<string, unknown>;
  private_jwk: Record<string, unknown>;
  created_at: Date;
  retired_at: Date | null;
}

interface Tables {
  api_keys: WithDefaults<ApiKeyRow, 'created_at' | 'last_used_at' | 'revoked_at'>;
  signing_keys: WithDefaults<SigningKeyRow, 'created_at' | 'retired_at'>;
}

export class AuthRepository {
  readonly #db: Kysely<Tables>;
  readonly #findByLookupSql: string;
  readonly #byLookup: Batcher<string, ApiKeyCredential | undefined>;
  constructor(db: Kysely<any>) {
    this.#db = db;
    this.#byLookup = new Batcher((lookupIds) => this.#findApiKeysByLookup(lookupIds));
    // Built once: this query runs on every API-key request, and building it was a tenth of a cheap GET's work.
    this.#findByLookupSql = (db as unknown as Kysely<Tables & { organizations: { id: string; features: string[] } }>)
      .selectFrom('api_keys')
      .innerJoin('organizations', 'organizations.id', 'api_keys.organization_id')
      // Scopes and features are fixed words without spaces; joined here, a split reads them for a
      // fraction of what parsing two Postgres array literals on every request cost.
      .select((eb) => [
        'api_keys.lookup_id',
        'api_keys.id',
        'api_keys.organization_id',
        sql<string>`array_to_string(${eb.ref('api_keys.scopes')}, ' ')`.as('scopes'),
        'api_keys.secret_hash',
        'api_keys.revoked_at',
        sql<string>`array_to_string(${eb.ref('organizations.features')}, ' ')`.as('organization_features'),
      ])
      .where(sql<boolean>`api_keys.lookup_id = any(${sql.raw('$1')}::text[])`)
      .compile().sql;
  }

  async insertApiKey(row: Omit<ApiKeyRow, 'created_at' | 'last_used_at' | 'revoked_at'>, db: Kysely<any> = this.#db): Promise<ApiKeyRow> {
    return (db as Kysely<Tables>).insertInto('api_keys').values(row).returningAll().executeTakeFirstOrThrow();
  }

  /**
   * The key with its organization's features, in one round trip: this runs on every API-key
   * request, and a second lookup for the organization doubled the cost of a cheap GET. Requests
   * authenticating at the same time share one statement.
   */
  findApiKeyByLookup(lookupId: string): Promise<ApiKeyCredential | undefined> {
    return this.#byLookup.submit(lookupId);
  }

  async #findApiKeysByLookup(lookupIds: string[]): Promise<Array<ApiKeyCredential | undefined>> {
    const { rows } = await this.#db.executeQuery<Omit<ApiKeyCredential, 'scopes' | 'organization_features'> & { lookup_id: string; scopes: string; organization_features: string }>(
      CompiledQuery.raw(this.#findByLookupSql, [lookupIds]),
    );
    const found = new Map(rows.map(({ lookup_id, ...row }) => [lookup_id, { ...row, scopes: words(row.scopes), organization_features: words(row.organization_features) }]));
    return lookupIds.map((id) => found.get(id));
  }

  async listApiKeys(organizationId: string, limit: number, after: Cursor | null): Promise<{ rows: ApiKeyRow[]; total: number }> {
    let q = this.#db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId);
    if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(new Date(after.createdAt), after.id)));
    const rows = await q.orderBy('created_at').orderBy('id').limit(limit + 1).execute();
    const count = await this.#db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    return { rows, total: Number(count.n) };
  }

  async revokeApiKey(organizationId: string, id: string): Promise<ApiKeyRow | undefined> {
    return this.#db
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  }

  async findApiKey(organizationId: string, id: string): Promise<ApiKeyRow | undefined> {
    return this.#db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  }

  async activeSigningKeys(db: Kysely<any> = this.#db): Promise<SigningKeyRow[]> {
    return (db as Kysely<Tables>).selectFrom('signing_keys').selectAll().where('retired_at', 'is', null).orderBy('created_at', 'desc').execute();
  }

  async insertSigningKey(row: Omit<SigningKeyRow, 'created_at' | 'retired_at'>, db: Kysely<any> = this.#db): Promise<void> {
    await (db as Kysely<Tables>).insertInto('signing_keys').values(row).onConflict((oc) => oc.column('kid').doNothing()).execute();
  }

  /**
   * Runs `work` in a transaction holding a lock that every Corridor process sharing this database
   * takes for the same purpose, so start-up work (the first signing key, the first organization)
   * happens exactly once when several processes start together.
   */
  async withStartupLock<T>(purpose: keyof typeof STARTUP_LOCKS, work: (trx: Kysely<any>) => Promise<T>): Promise<T> {
    return this.#db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${STARTUP_LOCKS[purpose]})`.execute(trx);
      return work(trx);
    });
  }
}
