import { sql } from 'kysely';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import { lookupBatcher } from '../platform/batch.ts';
import { statement } from '../platform/db/statement.ts';
import type { WithDefaults } from '../platform/db/types.ts';
import type { Cursor } from '../platform/http/pagination.ts';

export type DestinationKind = 'FIAT_ACCOUNT' | 'CRYPTO_WALLET';

export interface DestinationRow {
  id: string;
  organization_id: string;
  entity_id: string;
  kind: DestinationKind;
  version: number;
  nickname: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow {
  destination_id: string;
  version: number;
  organization_id: string;
  relationship: 'SELF' | 'THIRD_PARTY';
  rail: Record<string, unknown>;
  instructions: Record<string, unknown>;
  created_by_type: 'USER' | 'API_KEY';
  created_by_id: string;
  created_at: Date;
}

/** A destination with its current version's contents. */
export type CurrentRow = DestinationRow & Omit<VersionRow, 'destination_id' | 'version' | 'organization_id' | 'created_at'> & { version_created_at: Date };

/** What makes up one version; the version number and timestamps are assigned here. */
export type VersionContent = Pick<VersionRow, 'relationship' | 'rail' | 'instructions' | 'created_by_type' | 'created_by_id'>;

interface Tables {
  destinations: WithDefaults<DestinationRow, 'created_at' | 'updated_at'>;
  destination_versions: WithDefaults<VersionRow, 'created_at'>;
}

type CurrentKey = { organizationId: string; kind: DestinationKind; id: string };

export class DestinationRepository {
  readonly #db: Kysely<Tables>;
  // Quotes and transfers read their destination on every request; concurrent reads share a statement.
  readonly #currentStatement = statement<{ ids: string[]; organizations: string[]; kinds: string[] }, CurrentRow>((v) =>
    this.#current().where(sql<boolean>`d.id = any(${v.ids}::uuid[]) and (d.id, d.organization_id, d.kind) in (select * from unnest(${v.ids}::uuid[], ${v.organizations}::uuid[], ${v.kinds}::text[]))`),
  );
  readonly #currentByKey = lookupBatcher<CurrentKey, CurrentRow>(
    (keys) => this.#currentStatement.run(this.#db, { ids: keys.map((k) => k.id), organizations: keys.map((k) => k.organizationId), kinds: keys.map((k) => k.kind) }),
    (k) => `${k.organizationId}/${k.kind}/${k.id}`,
    (row) => `${row.organization_id}/${row.kind}/${row.id}`,
  );
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  /** A guard's condition (platform/db/guard.ts): the organization's destination of this kind is still at this version. */
  currentVersionCondition(refs: { kind: RawBuilder<unknown>; id: RawBuilder<unknown>; organizationId: RawBuilder<unknown>; version: RawBuilder<unknown> }): RawBuilder<boolean> {
    return sql<boolean>`coalesce((select true from destinations guard_destination where guard_destination.id = ${refs.id} and guard_destination.organization_id = ${refs.organizationId} and guard_destination.kind = ${refs.kind} and guard_destination.version = ${refs.version} limit 1), false)`;
  }

  async insert(row: Pick<DestinationRow, 'id' | 'organization_id' | 'entity_id' | 'kind' | 'nickname'>, content: VersionContent): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const now = new Date();
      await trx.insertInto('destinations').values({ ...row, version: 1, created_at: now, updated_at: now }).execute();
      await this.#insertVersion(trx, { destination_id: row.id, version: 1, organization_id: row.organization_id, created_at: now, ...content });
    });
  }

  async findCurrent(organizationId: string, kind: DestinationKind, id: string): Promise<CurrentRow | undefined> {
    return this.#currentByKey.submit({ organizationId, kind, id });
  }

  async list(organizationId: string, kind: DestinationKind, filter: { entityId?: string | undefined }, limit: number, after: Cursor | null): Promise<{ rows: CurrentRow[]; total: number }> {
    let page = this.#current().where('d.organization_id', '=', organizationId).where('d.kind', '=', kind);
    let count = this.#db.selectFrom('destinations').where('organization_id', '=', organizationId).where('kind', '=', kind);
    if (filter.entityId) {
      page = page.where('d.entity_id', '=', filter.entityId);
      count = count.where('entity_id', '=', filter.entityId);
    }
    if (after) page = page.where((eb) => eb(eb.refTuple('d.created_at', 'd.id'), '>', eb.tuple(new Date(after.createdAt), after.id)));
    const rows = await page.orderBy('d.created_at').orderBy('d.id').limit(limit + 1).execute();
    const total = await count.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    return { rows, total: Number(total.n) };
  }

  async findVersion(organizationId: string, kind: DestinationKind, id: string, version: number): Promise<{ destination: DestinationRow; version: VersionRow } | undefined> {
    const destination = await this.#find(organizationId, kind, id);
    if (!destination) return undefined;
    const row = await this.#db.selectFrom('destination_versions').selectAll().where('destination_id', '=', id).where('version', '=', version).executeTakeFirst();
    return row ? { destination, version: row } : undefined;
  }

  /** Versions oldest first, after the given version number. */
  async listVersions(organizationId: string, kind: DestinationKind, id: string, limit: number, afterVersion: number): Promise<{ destination: DestinationRow; rows: VersionRow[] } | undefined> {
    const destination = await this.#find(organizationId, kind, id);
    if (!destination) return undefined;
    const rows = await this.#db
      .selectFrom('destination_versions')
      .selectAll()
      .where('destination_id', '=', id)
      .where('version', '>', afterVersion)
      .orderBy('version')
      .limit(limit + 1)
      .execute();
    return { destination, rows };
  }

  /**
   * Applies an edit made against `expectedVersion`: a new version when `content` is given, and the
   * nickname when given. Answers false when someone else changed the destination first.
   */
  async update(id: string, expectedVersion: number, change: { content?: VersionContent; nickname?: string | null }): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const now = new Date();
      const version = change.content ? expectedVersion + 1 : expectedVersion;
      const updated = await trx
        .updateTable('destinations')
        .set({ version, updated_at: now, ...(change.nickname !== undefined ? { nickname: change.nickname } : {}) })
        .where('id', '=', id)
        .where('version', '=', expectedVersion)
        .returning(['organization_id'])
        .executeTakeFirst();
      if (!updated) return false;
      if (change.content) await this.#insertVersion(trx, { destination_id: id, version, organization_id: updated.organization_id, created_at: now, ...change.content });
      return true;
    });
  }

  async #find(organizationId: string, kind: DestinationKind, id: string): Promise<DestinationRow | undefined> {
    return this.#db.selectFrom('destinations').selectAll().where('organization_id', '=', organizationId).where('kind', '=', kind).where('id', '=', id).executeTakeFirst();
  }

  async #insertVersion(trx: Transaction<Tables>, row: VersionRow): Promise<void> {
    await trx
      .insertInto('destination_versions')
      .values({ ...row, rail: JSON.stringify(row.rail) as never, instructions: JSON.stringify(row.instructions) as never })
      .execute();
  }

  #current() {
    return this.#db
      .selectFrom('destinations as d')
      .innerJoin('destination_versions as v', (join) => join.onRef('v.destination_id', '=', 'd.id').onRef('v.version', '=', 'd.version'))
      .selectAll('d')
      .select(['v.relationship', 'v.rail', 'v.instructions', 'v.created_by_type', 'v.created_by_id', 'v.created_at as version_created_at']);
  }
}
