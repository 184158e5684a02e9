// Organizations are the tenants. Every other resource hangs off exactly one of them.
import type { Kysely } from 'kysely';
import type { Environment } from '../platform/config.ts';
import { notFound } from '../platform/http/errors.ts';
import { iso } from '../platform/time.ts';
import { OrganizationRepository } from './repository.ts';
import type { OrganizationRow } from './repository.ts';
import { newId } from '../platform/ids.ts';

export const FEATURES = ['reports'] as const;
export type Feature = (typeof FEATURES)[number];

export interface Organization {
  id: string;
  name: string;
  kind: 'CUSTOMER' | 'OPERATOR';
  features: Feature[];
  createdAt: Date;
}

/** What the service operator sees of an organization on /v1/ops/organizations. */
export interface OrganizationView {
  id: string;
  name: string;
  kind: 'CUSTOMER' | 'OPERATOR';
  features: Feature[];
  createdAt: string;
}

const toView = (org: Organization): OrganizationView => ({ ...org, createdAt: iso(org.createdAt) });

const toOrganization = (row: OrganizationRow): Organization => ({
  id: row.id,
  name: row.name,
  kind: row.kind,
  features: row.features.filter((f): f is Feature => (FEATURES as readonly string[]).includes(f)),
  createdAt: row.created_at,
});

export class OrganizationService {
  readonly #featureListeners: Array<(organizationId: string) => void> = [];
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
      { id: newId(), name, kind: options.kind ?? 'CUSTOMER', features: options.kind === 'OPERATOR' ? [] : this.defaultFeatures() },
      options.trx,
    );
    return toOrganization(row);
  }

  async get(id: string): Promise<Organization | null> {
    const row = await this.#repo.findById(id);
    return row ? toOrganization(row) : null;
  }

  async view(id: string): Promise<OrganizationView> {
    const org = await this.get(id);
    if (!org) throw notFound('Organization');
    return toView(org);
  }

  /** Called after an organization's features change (authentication forgets what it keeps of them). */
  onFeaturesChanged(listener: (organizationId: string) => void): void {
    this.#featureListeners.push(listener);
  }

  /**
   * Replaces the organization's features. The only way to turn a feature on in production, where
   * organizations start with none; the next request of this process sees them, and every
   * process within a second (API-key authentication keeps a credential that long).
   */
  async setFeatures(id: string, features: readonly Feature[]): Promise<OrganizationView> {
    // Stored once each, in FEATURES order, so the answer does not depend on how the list was written.
    const row = await this.#repo.updateFeatures(id, FEATURES.filter((f) => features.includes(f)));
    if (!row) throw notFound('Organization');
    for (const listener of this.#featureListeners) listener(id);
    return toView(toOrganization(row));
  }

  async operator(): Promise<Organization | null> {
    const row = await this.#repo.findOperator();
    return row ? toOrganization(row) : null;
  }

  async customerCount(trx?: Kysely<any>): Promise<number> {
    return this.#repo.countCustomers(trx);
  }
}
