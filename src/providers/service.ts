// The provider registry: builds one adapter per entry of the environment's provider file and
// answers who is available. Availability is the configured value unless an operator overrode it;
// overrides live in provider_status so every process sees them (after its next refresh).
import type { Kysely } from 'kysely';
import { ApiError, notFound } from '../platform/http/errors.ts';
import { decodeKeyCursor, encodeKeyCursor } from '../platform/http/pagination.ts';
import type { Logger } from '../platform/logger.ts';
import { iso } from '../platform/time.ts';
import { isSimulated, railKey } from './adapter.ts';
import type { Availability, Capability, ProviderAdapter, Rail, SimulatedProvider } from './adapter.ts';
import { isBuiltInAdapter, resolveCredentials } from './configuration.ts';
import type { ProviderEntry, ProviderFile } from './configuration.ts';
import { ProviderStatusRepository } from './repository.ts';
import type { ProviderStatusRow } from './repository.ts';
import { SimulatedSandboxProvider } from './sandbox/simulator.ts';
import { UnavailableProvider } from './unavailable.ts';

/** What operators see of a provider. Credentials are not part of it, by construction. */
export interface ProviderView {
  id: string;
  displayName: string;
  adapter: string;
  integrated: boolean;
  simulated: boolean;
  configuredStatus: Availability;
  status: Availability;
  overridden: boolean;
  statusReason: string | null;
  statusUpdatedAt: string | null;
  capabilities: Capability[];
}

// Providers come from the configuration file, not from rows with a created_at, so the shared
// (createdAt, id) cursor cannot name them: the cursor is the last provider id seen, and the next
// page starts after it in id order (even if that provider left the file meanwhile).
const PROVIDER_ID = /^[a-z0-9][a-z0-9-]{1,62}$/;
const isProviderId = (p: unknown): p is string => typeof p === 'string' && PROVIDER_ID.test(p);
const afterProvider = (cursor: string | undefined): string | null => (cursor ? decodeKeyCursor(cursor, 'p', isProviderId) : null);

interface Registered {
  entry: ProviderEntry;
  adapter: ProviderAdapter;
}

export interface RegistryOptions {
  db: Kysely<any>;
  file: ProviderFile;
  log: Logger;
  processEnv?: NodeJS.ProcessEnv;
}

export class ProviderRegistry {
  readonly #providers = new Map<string, Registered>();
  readonly #status: ProviderStatusRepository;
  readonly #log: Logger;
  #overrides = new Map<string, ProviderStatusRow>();

  constructor(options: RegistryOptions) {
    this.#status = new ProviderStatusRepository(options.db);
    this.#log = options.log;
    for (const entry of options.file.providers) {
      let adapter: ProviderAdapter;
      if (entry.adapter === 'simulator') {
        adapter = new SimulatedSandboxProvider({
          entry,
          credentials: resolveCredentials(entry, options.processEnv),
          db: options.db,
          availability: () => this.availabilityOf(entry.id),
        });
      } else {
        adapter = new UnavailableProvider(entry);
        this.#log.warn({ providerId: entry.id, adapter: entry.adapter }, 'provider adapter type is not built in; the provider is served as DOWN');
      }
      this.#providers.set(entry.id, { entry, adapter });
    }
  }

  all(): ProviderAdapter[] {
    return [...this.#providers.values()].map((p) => p.adapter);
  }

  get(id: string): ProviderAdapter | undefined {
    return this.#providers.get(id)?.adapter;
  }

  /** The provider's simulator, for the sandbox execution engine; undefined for real adapters. */
  simulator(id: string): SimulatedProvider | undefined {
    const adapter = this.get(id);
    return adapter && isSimulated(adapter) ? adapter : undefined;
  }

  /** Current availability as of the last refresh: the operator's override, else the configured value. */
  availabilityOf(id: string): Availability {
    const p = this.#providers.get(id);
    if (!p) throw new Error(`unknown provider ${id}`);
    if (!isBuiltInAdapter(p.entry.adapter)) return 'DOWN';
    return this.#overrides.get(id)?.status ?? p.entry.availability;
  }

  /** Providers able to collect on (or pay out on) a rail; activeOnly leaves out DOWN ones. */
  providersFor(rail: Rail, kind: 'COLLECTION' | 'PAYOUT', options: { activeOnly?: boolean } = {}): ProviderAdapter[] {
    const key = railKey(rail);
    return this.all().filter(
      (p) =>
        p.capabilities().some((c) => c.kind === kind && railKey(c.rail) === key) && (!options.activeOnly || p.availability() !== 'DOWN'),
    );
  }

  /** Reloads operators' overrides, so a change made by another process takes effect here. */
  async refresh(): Promise<void> {
    const rows = await this.#status.all();
    this.#overrides = new Map(rows.filter((r) => this.#providers.has(r.provider_id)).map((r) => [r.provider_id, r]));
  }

  /** Providers in id order, a page at a time; total counts every configured provider. */
  async list(limit: number, cursor?: string): Promise<{ data: ProviderView[]; meta: { total: number; nextCursor: string | null } }> {
    const after = afterProvider(cursor);
    await this.refresh();
    const ids = [...this.#providers.keys()].sort();
    const rest = after === null ? ids : ids.filter((id) => id > after);
    const page = rest.slice(0, limit);
    const last = page[page.length - 1];
    return { data: page.map((id) => this.#view(id)), meta: { total: ids.length, nextCursor: rest.length > limit && last ? encodeKeyCursor('p', last) : null } };
  }

  async view(id: string): Promise<ProviderView> {
    if (!this.#providers.has(id)) throw notFound('Provider');
    await this.refresh();
    return this.#view(id);
  }

  /** Overrides a provider's availability for every process; null returns it to the configured value. */
  async setStatus(id: string, status: Availability | null, by: { userId: string | null; reason?: string | null }): Promise<ProviderView> {
    const p = this.#providers.get(id);
    if (!p) throw notFound('Provider');
    if (status !== null && status !== 'DOWN' && !isBuiltInAdapter(p.entry.adapter)) {
      throw new ApiError(409, 'provider_not_integrated', `Provider ${id} uses adapter type ${p.entry.adapter}, which this build does not implement; it can only be DOWN`);
    }
    if (status === null) await this.#status.remove(id);
    else await this.#status.upsert({ provider_id: id, status, reason: by.reason ?? null, updated_by_user_id: by.userId });
    await this.refresh();
    this.#log.info({ providerId: id, status: status ?? `configured (${p.entry.availability})`, userId: by.userId }, 'provider availability changed');
    return this.#view(id);
  }

  #view(id: string): ProviderView {
    const { entry, adapter } = this.#providers.get(id)!;
    const override = this.#overrides.get(id);
    return {
      id,
      displayName: entry.displayName,
      adapter: entry.adapter,
      integrated: isBuiltInAdapter(entry.adapter),
      simulated: isSimulated(adapter),
      configuredStatus: entry.availability,
      status: this.availabilityOf(id),
      overridden: Boolean(override),
      statusReason: override?.reason ?? null,
      statusUpdatedAt: override ? iso(override.updated_at) : null,
      capabilities: adapter.capabilities(),
    };
  }
}
