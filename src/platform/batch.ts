// Group commit for statements: concurrent callers of one kind of query share one round trip.
//
// A request's own work in this service is cheap; what costs is each round trip to the database
// (a socket write and a wake-up on both sides, a statement to parse, bind and run, a commit). When
// many requests run at once, a Batcher makes the callers that arrive while a batch of their kind
// is in flight wait for the next one, which then carries all of them: a quiet server sends every
// call alone at once, and a busy one sends one statement for many. Nothing waits on a timer.
//
// A batch is all or nothing on the database (one statement, or one transaction). When it fails,
// each of its items is run again alone, so one bad item fails only its own caller.

export interface BatcherOptions {
  /** Most items in one batch (bounds a statement's size). */
  maxSize?: number;
  /** Batches of this kind in flight at once. */
  concurrency?: number;
  /**
   * Gathers a batch for this long before sending it, instead of only the callers of one turn of
   * the event loop: for work no caller waits on (background work), where larger batches cost less.
   */
  windowMs?: number;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (reason: unknown) => void;
}

export class Batcher<I, O> {
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #maxSize: number;
  readonly #concurrency: number;
  readonly #windowMs: number;
  #queue: Array<Pending<I, O>> = [];
  #inFlight = 0;
  #scheduled = false;

  /** `run` answers one result per item, in the items' order. */
  constructor(run: (items: I[]) => Promise<O[]>, options: BatcherOptions = {}) {
    this.#run = run;
    this.#maxSize = options.maxSize ?? 64;
    this.#concurrency = options.concurrency ?? 1;
    this.#windowMs = options.windowMs ?? 0;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  /**
   * Starts the next batch once the callers of this turn of the event loop have joined it: the
   * requests whose bytes arrived together are parsed in one turn and go in one batch.
   */
  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#concurrency || !this.#queue.length) return;
    this.#scheduled = true;
    const start = () => {
      this.#scheduled = false;
      while (this.#inFlight < this.#concurrency && this.#queue.length) {
        const batch = this.#queue.splice(0, this.#maxSize);
        this.#inFlight++;
        void this.#execute(batch).finally(() => {
          this.#inFlight--;
          this.#schedule();
        });
      }
    };
    // A window closes early once a full batch is waiting.
    if (this.#windowMs > 0 && this.#queue.length < this.#maxSize) setTimeout(start, this.#windowMs);
    else setImmediate(start);
  }

  async #execute(batch: Array<Pending<I, O>>): Promise<void> {
    let results: O[];
    try {
      results = await this.#run(batch.map((p) => p.item));
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      // Whatever failed rolled the whole batch back: each item alone finds its own answer.
      await Promise.all(batch.map((p) => this.#alone(p)));
      return;
    }
    if (results.length !== batch.length) {
      const err = new Error(`batch of ${batch.length} answered ${results.length} results`);
      for (const p of batch) p.reject(err);
      return;
    }
    batch.forEach((p, i) => p.resolve(results[i]!));
  }

  async #alone(pending: Pending<I, O>): Promise<void> {
    try {
      const [result] = await this.#run([pending.item]);
      pending.resolve(result!);
    } catch (err) {
      pending.reject(err);
    }
  }
}

/**
 * A Batcher for reads by key: one query fetches the rows of every distinct key in the batch, and
 * each caller gets the row with its own key (undefined when there is none).
 */
export function lookupBatcher<K, R>(fetch: (keys: K[]) => Promise<R[]>, keyOf: (key: K) => string, rowKeyOf: (row: R) => string, options: BatcherOptions = {}): Batcher<K, R | undefined> {
  return new Batcher<K, R | undefined>(async (keys) => {
    const distinct = new Map<string, K>();
    for (const key of keys) distinct.set(keyOf(key), key);
    const rows = await fetch([...distinct.values()]);
    const byKey = new Map(rows.map((row) => [rowKeyOf(row), row]));
    return keys.map((key) => byKey.get(keyOf(key)));
  }, options);
}

/**
 * Awaits independent reads together (so they can join their batches at once) and fails as running
 * them in turn would have: with the first one's error, in the order given.
 */
export async function allInOrder<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(promises);
  for (const result of settled) if (result.status === 'rejected') throw result.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
