// Per-credential fixed-window rate limit, in process memory. Each process of a deployment limits
// independently; the limit is a guard against runaway clients, not a billing meter.
export interface RateVerdict {
  limit: number;
  remaining: number;
  resetSeconds: number;
  limited: boolean;
}

export class RateLimiter {
  readonly #limit: number;
  readonly #windowMs = 60_000;
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(limitPerMinute: number) {
    this.#limit = limitPerMinute;
  }

  /** Counts one request; null when limiting is off. */
  take(key: string, now = Date.now()): RateVerdict | null {
    if (this.#limit <= 0) return null;
    let w = this.#windows.get(key);
    if (!w || now - w.start >= this.#windowMs) {
      w = { start: now, count: 0 };
      this.#windows.set(key, w);
      if (this.#windows.size > 100_000) this.#evict(now);
    }
    w.count++;
    const resetSeconds = Math.max(1, Math.ceil((w.start + this.#windowMs - now) / 1000));
    return { limit: this.#limit, remaining: Math.max(0, this.#limit - w.count), resetSeconds, limited: w.count > this.#limit };
  }

  #evict(now: number) {
    for (const [k, w] of this.#windows) if (now - w.start >= this.#windowMs) this.#windows.delete(k);
  }
}
