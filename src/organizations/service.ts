// Organizations are the tenants. Every other resource hangs off exactly one of them.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Environment } from '../platform/config.ts';
import { OrganizationRepository } from './repository.ts';
import type { OrganizationRow } from './repository.ts';

export const FEATURES = ['reports'] as const;
export type Feature = (typeof FEATURES)[number];

export interface Organization {
  id: string;
  name: string;
  kind: 'CUSTOMER' | 'OPERATOR';
  features: Feature[];
  createdAt: Date;
}

const toOrganization = (row: OrganizationRow): Organization => ({
  id: row.id,
  name: row.name,
  kind: row.kind,
  features: row.features.filter((f): f is Feature => (FEATURES as readonly string[]).includes(f)),
  createdAt: row.created_at,
});

export class OrganizationService {
  readonly #repo: OrganizationRepository;
  readonly #env: Environment;

  constructor(db: Kysely<any>, env: Environment) {
    this.#repo = new OrganizationRepository(db);
    this.#env = env;
  }

  /** Features a new organization starts with: reports are on by default in sandbox. */
  defaultFeatures(): Feature[] {
    return this.#env === 'sandbox' ? ['reports'] : [];
  }

  async create(name: string, options: { kind?: 'CUSTOMER' | 'OPERATOR'; trx?: Kysely<any> } = {}): Promise<Organization> {
    const row = await this.#repo.insert(
      { id: randomUUID(), name, kind: options.kind ?? 'CUSTOMER', features: options.kind === 'OPERATOR' ? [] : this.defaultFeatures() },
      options.trx,
    );
    return toOrganization(row);
  }

  async get(id: string): Promise<Organization | null> {
    const row = await this.#repo.findById(id);
    return row ? toOrganization(row) : null;
  }

  async operator(): Promise<Organization | null> {
    const row = await this.#repo.findOperator();
    return row ? toOrganization(row) : null;
  }

  async customerCount(trx?: Kysely<any>): Promise<number> {
    return this.#repo.countCustomers(trx);
  }
}
