// Stands in for a configured provider whose adapter type this build does not implement yet
// (a real provider listed in production's file ahead of its integration). It shows its rails
// in the directory as DOWN and refuses every call, so nothing is ever routed to it.
import { ProviderError } from './adapter.ts';
import type { Availability, Capability, LegHandOff, LegQuote, LegStatusReport, ProviderAdapter } from './adapter.ts';
import type { ProviderEntry } from './configuration.ts';

export class UnavailableProvider implements ProviderAdapter {
  readonly id: string;
  readonly displayName: string;
  readonly adapterType: string;
  readonly #capabilities: Capability[];

  constructor(entry: ProviderEntry) {
    this.id = entry.id;
    this.displayName = entry.displayName;
    this.adapterType = entry.adapter;
    this.#capabilities = entry.capabilities;
  }

  capabilities(): Capability[] {
    return this.#capabilities;
  }

  availability(): Availability {
    return 'DOWN';
  }

  async quoteLeg(): Promise<LegQuote> {
    throw this.#refuse();
  }

  async executeLeg(): Promise<LegHandOff> {
    throw this.#refuse();
  }

  async legStatus(): Promise<LegStatusReport> {
    throw this.#refuse();
  }

  #refuse(): ProviderError {
    return new ProviderError('provider_unavailable', this.id, `${this.displayName} is not integrated in this build (adapter type ${this.adapterType})`);
  }
}
