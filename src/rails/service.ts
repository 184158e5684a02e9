// The rail directory: every fiat route (country, currency, method) and crypto route (blockchain,
// asset) some provider can collect or pay out on, with the availability of those providers.
// The set of routes comes from configuration and never changes while running; availability does,
// so the directory is rebuilt from the registry every CORRIDOR_RAILS_REFRESH_SECONDS.
import type { Logger } from '../platform/logger.ts';
import { railKey } from '../providers/adapter.ts';
import type { Availability, CryptoRail, FiatRail, ProviderAdapter, Rail } from '../providers/adapter.ts';
import type { ProviderRegistry } from '../providers/service.ts';

export interface RailProviderView {
  name: string;
  status: Availability;
}
export interface FiatRailView {
  country: string;
  currency: string;
  method: FiatRail['method'];
  activeProviderCount: number;
  providers: RailProviderView[];
}
export interface CryptoRailView {
  blockchain: string;
  asset: string;
  activeProviderCount: number;
  providers: RailProviderView[];
}
export interface RailDirectoryView {
  fiat: FiatRailView[];
  crypto: CryptoRailView[];
}

interface Route<R extends Rail> {
  rail: R;
  providers: ProviderAdapter[];
}

export interface RailServiceOptions {
  providers: ProviderRegistry;
  refreshSeconds: number;
  log: Logger;
}

export class RailService {
  readonly #providers: ProviderRegistry;
  readonly #refreshMs: number;
  readonly #log: Logger;
  readonly #fiat: Route<FiatRail>[];
  readonly #crypto: Route<CryptoRail>[];
  #snapshot: RailDirectoryView;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

  constructor(options: RailServiceOptions) {
    this.#providers = options.providers;
    this.#refreshMs = options.refreshSeconds * 1000;
    this.#log = options.log;
    const routes = new Map<string, Route<Rail>>();
    for (const provider of options.providers.all()) {
      for (const c of provider.capabilities()) {
        if (c.kind === 'CONVERSION') continue;
        const key = railKey(c.rail);
        const route = routes.get(key) ?? { rail: c.rail, providers: [] };
        if (!route.providers.includes(provider)) route.providers.push(provider);
        routes.set(key, route);
      }
    }
    const sorted = [...routes.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
    for (const r of sorted) r.providers.sort((a, b) => a.displayName.localeCompare(b.displayName, 'en'));
    this.#fiat = sorted.filter((r): r is Route<FiatRail> => r.rail.type === 'FIAT');
    this.#crypto = sorted.filter((r): r is Route<CryptoRail> => r.rail.type === 'CRYPTO');
    this.#snapshot = this.#build();
  }

  /** Refreshes now, then every refresh interval until stop(). */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer ??= setInterval(() => void this.refresh(), this.#refreshMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** Reloads provider availability and rebuilds the cached directory. Never throws: a failed refresh keeps the last directory. */
  async refresh(): Promise<void> {
    // Refreshes never overlap: a tick arriving during one joins it.
    this.#running ??= (async () => {
      try {
        await this.#providers.refresh();
        this.#snapshot = this.#build();
      } catch (err) {
        this.#log.warn({ err }, 'rail directory refresh failed; serving the previous directory');
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }

  /** The cached directory (GET /v1/rails). */
  directory(options: { activeOnly?: boolean } = {}): RailDirectoryView {
    if (!options.activeOnly) return this.#snapshot;
    return {
      fiat: this.#snapshot.fiat.filter((r) => r.activeProviderCount > 0),
      crypto: this.#snapshot.crypto.filter((r) => r.activeProviderCount > 0),
    };
  }

  /** Whether the environment knows this fiat route, whatever its providers' availability today. */
  hasFiatRail(rail: { country: string; currency: string; method: string }): boolean {
    return this.#fiat.some((r) => r.rail.country === rail.country && r.rail.currency === rail.currency && r.rail.method === rail.method);
  }

  /** Whether the environment knows this crypto route, whatever its providers' availability today. */
  hasCryptoRail(rail: { blockchain: string; asset: string }): boolean {
    return this.#crypto.some((r) => r.rail.blockchain === rail.blockchain && r.rail.asset === rail.asset);
  }

  /** Every fiat route of the environment. */
  fiatRails(): FiatRail[] {
    return this.#fiat.map((r) => r.rail);
  }

  /** Every crypto route of the environment. */
  cryptoRails(): CryptoRail[] {
    return this.#crypto.map((r) => r.rail);
  }

  /** Providers that can collect or pay out on a rail (current availability; activeOnly leaves out DOWN ones). */
  providersFor(rail: Rail, kind: 'COLLECTION' | 'PAYOUT', options: { activeOnly?: boolean } = {}): ProviderAdapter[] {
    return this.#providers.providersFor(rail, kind, options);
  }

  #build(): RailDirectoryView {
    const providers = (route: Route<Rail>) => {
      const list = route.providers.map((p) => ({ name: p.displayName, status: p.availability() }));
      return { activeProviderCount: list.filter((p) => p.status !== 'DOWN').length, providers: list };
    };
    return {
      fiat: this.#fiat.map((r) => ({ country: r.rail.country, currency: r.rail.currency, method: r.rail.method, ...providers(r) })),
      crypto: this.#crypto.map((r) => ({ blockchain: r.rail.blockchain, asset: r.rail.asset, ...providers(r) })),
    };
  }
}
