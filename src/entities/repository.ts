import { sql } from 'kysely';
import type { Kysely, RawBuilder } from 'kysely';
import { lookupBatcher } from '../platform/batch.ts';
import { statement } from '../platform/db/statement.ts';
import type { WithDefaults } from '../platform/db/types.ts';
import type { Cursor } from '../platform/http/pagination.ts';

export type EntityStatus = 'PENDING' | 'ACTIVE' | 'REJECTED';
export type EntityType = 'INDIVIDUAL' | 'BUSINESS';

export interface EntityRow {
  id: string;
  organization_id: string;
  type: EntityType;
  status: EntityStatus;
  status_reason: string | null;
  country: string;
  profile: Record<string, unknown>;
  reviewed_by_user_id: string | null;
  reviewed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

interface Tables {
  entities: WithDefaults<EntityRow, 'created_at' | 'updated_at' | 'reviewed_by_user_id' | 'reviewed_at' | 'status_reason'>;
}

export interface EntityFilter {
  organizationId?: string;
  status?: EntityStatus;
  type?: EntityType;
}

type EntityKey = { organizationId: string; id: string };

export class EntityRepository {
  readonly #db: Kysely<Tables>;
  // Quotes and transfers read their entity on every request; concurrent reads share a statement.
  readonly #ownedStatement = statement<{ ids: string[]; organizations: string[] }, EntityRow>((v) =>
    this.#db.selectFrom('entities').selectAll().where(sql<boolean>`id = any(${v.ids}::uuid[]) and (id, organization_id) in (select * from unnest(${v.ids}::uuid[], ${v.organizations}::uuid[]))`),
  );
  readonly #owned = lookupBatcher<EntityKey, EntityRow>(
    (keys) => this.#ownedStatement.run(this.#db, { ids: keys.map((k) => k.id), organizations: keys.map((k) => k.organizationId) }),
    (k) => `${k.organizationId}/${k.id}`,
    (row) => `${row.organization_id}/${row.id}`,
  );
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  /** A guard's condition (platform/db/guard.ts): the entity is the organization's and ACTIVE. */
  activeCondition(refs: { id: RawBuilder<unknown>; organizationId: RawBuilder<unknown> }): RawBuilder<boolean> {
    return sql<boolean>`coalesce((select true from entities guard_entity where guard_entity.id = ${refs.id} and guard_entity.organization_id = ${refs.organizationId} and guard_entity.status = 'ACTIVE' limit 1), false)`;
  }

  async insert(row: Pick<EntityRow, 'id' | 'organization_id' | 'type' | 'status' | 'status_reason' | 'country' | 'profile'>): Promise<EntityRow> {
    return this.#db
      .insertInto('entities')
      .values({ ...row, profile: JSON.stringify(row.profile) as never })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** organizationId null looks across organizations (the operator's view). */
  async find(organizationId: string | null, id: string): Promise<EntityRow | undefined> {
    if (organizationId !== null) return this.#owned.submit({ organizationId, id });
    return this.#db.selectFrom('entities').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async list(filter: EntityFilter, limit: number, after: Cursor | null): Promise<{ rows: EntityRow[]; total: number }> {
    const base = () => {
      let q = this.#db.selectFrom('entities');
      if (filter.organizationId) q = q.where('organization_id', '=', filter.organizationId);
      if (filter.status) q = q.where('status', '=', filter.status);
      if (filter.type) q = q.where('type', '=', filter.type);
      return q;
    };
    let page = base().selectAll();
    if (after) page = page.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(new Date(after.createdAt), after.id)));
    const rows = await page.orderBy('created_at').orderBy('id').limit(limit + 1).execute();
    const count = await base().select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    return { rows, total: Number(count.n) };
  }

  /** Moves the status only if it is still `from`, so two reviewers cannot both decide. */
  async moveStatus(id: string, from: EntityStatus, to: EntityStatus, review: { reason: string | null; reviewerUserId: string | null }): Promise<EntityRow | undefined> {
    return this.#db
      .updateTable('entities')
      .set({ status: to, status_reason: review.reason, reviewed_by_user_id: review.reviewerUserId, reviewed_at: new Date(), updated_at: new Date() })
      .where('id', '=', id)
      .where('status', '=', from)
      .returningAll()
      .executeTakeFirst();
  }
}
