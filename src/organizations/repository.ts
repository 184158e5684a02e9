import type { Kysely } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';

export interface OrganizationRow {
  id: string;
  name: string;
  kind: 'CUSTOMER' | 'OPERATOR';
  features: string[];
  created_at: Date;
}

interface Tables {
  organizations: WithDefaults<OrganizationRow, 'created_at'>;
}

export class OrganizationRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  async insert(row: Omit<OrganizationRow, 'created_at'>, db: Kysely<any> = this.#db): Promise<OrganizationRow> {
    return (db as Kysely<Tables>).insertInto('organizations').values(row).returningAll().executeTakeFirstOrThrow();
  }

  async findById(id: string): Promise<OrganizationRow | undefined> {
    return this.#db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async updateFeatures(id: string, features: string[]): Promise<OrganizationRow | undefined> {
    return this.#db.updateTable('organizations').set({ features }).where('id', '=', id).returningAll().executeTakeFirst();
  }

  async findOperator(): Promise<OrganizationRow | undefined> {
    return this.#db.selectFrom('organizations').selectAll().where('kind', '=', 'OPERATOR').executeTakeFirst();
  }

  async countCustomers(db: Kysely<any> = this.#db): Promise<number> {
    const row = await (db as Kysely<Tables>).selectFrom('organizations').select((eb) => eb.fn.countAll<string>().as('n')).where('kind', '=', 'CUSTOMER').executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
