import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import type { Cursor } from '../platform/http/pagination.ts';

export interface UserRow {
  id: string;
  organization_id: string;
  email: string;
  full_name: string;
  password_hash: string;
  roles: string[];
  status: 'ACTIVE' | 'DISABLED';
  created_at: Date;
}

interface Tables {
  users: WithDefaults<UserRow, 'created_at' | 'status'>;
}

export class UserRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  async insert(row: Omit<UserRow, 'created_at' | 'status'>, db: Kysely<any> = this.#db): Promise<UserRow> {
    return (db as Kysely<Tables>).insertInto('users').values(row).returningAll().executeTakeFirstOrThrow();
  }

  async findByEmail(email: string): Promise<UserRow | undefined> {
    return this.#db.selectFrom('users').selectAll().where(sql`lower(email)`, '=', email.toLowerCase()).executeTakeFirst();
  }

  async findById(id: string): Promise<UserRow | undefined> {
    return this.#db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findInOrganization(organizationId: string, id: string): Promise<UserRow | undefined> {
    return this.#db.selectFrom('users').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  }

  async list(organizationId: string, limit: number, after: Cursor | null): Promise<{ rows: UserRow[]; total: number }> {
    let q = this.#db.selectFrom('users').selectAll().where('organization_id', '=', organizationId);
    if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(new Date(after.createdAt), after.id)));
    const rows = await q.orderBy('created_at').orderBy('id').limit(limit + 1).execute();
    const count = await this.#db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    return { rows, total: Number(count.n) };
  }
}
