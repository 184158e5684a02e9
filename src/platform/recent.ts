// What this process saw a moment ago, kept for a short while: the facts a request would
// otherwise read again (an API key it just checked, a quote option it just made). Whatever is
// kept here is either checked again by the statement that relies on it (a guard: see
// db/guard.ts) or is allowed to be this old, as its user documents.

export class RecentMemory<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();
  readonly #capacity: number;
  readonly #ttlMs: number;

  /** Holds at most `capacity` entries (the oldest go first), each for `ttlMs` unless told otherwise. */
  constructor(options: { capacity: number; ttlMs: number }) {
    this.#capacity = options.capacity;
    this.#ttlMs = options.ttlMs;
  }

  get(key: string, now = Date.now()): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, options: { until?: number } = {}): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, until: options.until ?? Date.now() + this.#ttlMs });
    // A Map iterates in insertion order: the first key is the one set longest ago.
    while (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
