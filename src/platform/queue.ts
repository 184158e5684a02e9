// The durable job queue (pg-boss) on either engine. On PGlite it is handed the in-process
// instance through pg-boss's own adapter, so LISTEN/NOTIFY works and no socket is opened.
import { PgBoss, fromKysely, fromPglite } from 'pg-boss';
import type { Job, Queue } from 'pg-boss';
import type { Transaction } from 'kysely';
import type { Database } from './db/database.ts';
import type { Logger } from './logger.ts';

export type JobHandler<T> = (data: T, job: Job<T>) => Promise<void>;

export interface JobDefinition<T extends object = object> {
  name: string;
  handler: JobHandler<T>;
  /** Retry and expiry policy of the queue, and its singleton policy (e.g. 'short'). */
  queue?: Omit<Queue, 'name'>;
  /** Cron expression (UTC) for periodic jobs. */
  cron?: string;
  /** Jobs worked at once by this process. */
  concurrency?: number;
  /**
   * Jobs fetched per poll (default 1). Above 1, each fetch takes up to this many, runs them at
   * once and settles each on its own (one failing does not retry the others), and the worker
   * fetches again without waiting while fetches come back full: for queues of many short jobs.
   */
  batchSize?: number;
  /**
   * Works a fetched batch in one call instead of one handler call per job, for work that is
   * cheaper done together. Answers, in the order given, null for each job done and the error
   * of each job that failed (retried per the queue's policy; the others are not).
   */
  batchHandler?: (data: T[]) => Promise<Array<Error | null>>;
  pollingIntervalSeconds?: number;
}

export interface SendOptions {
  startAfter?: Date | number;
  singletonKey?: string;
  /** Enqueue inside this transaction, so the job exists exactly when the change commits. */
  trx?: Transaction<any>;
}

export class JobQueue {
  readonly boss: PgBoss;
  readonly #log: Logger;
  readonly #definitions = new Map<string, JobDefinition<any>>();
  #started = false;

  constructor(db: Database, log: Logger) {
    this.#log = log;
    this.boss =
      db.engine === 'pglite'
        ? new PgBoss({ db: fromPglite(db.pglite!), backend: 'pglite', schema: 'pgboss' })
        : new PgBoss({ connectionString: db.url!, max: 4, schema: 'pgboss', application_name: 'corridor-jobs' });
    this.boss.on('error', (err) => this.#log.error({ err }, 'job queue error'));
  }

  /** Declares a job kind; call before start(). */
  define<T extends object>(definition: JobDefinition<T>): void {
    this.#definitions.set(definition.name, definition);
  }

  get names(): string[] {
    return [...this.#definitions.keys()];
  }

  /**
   * Starts pg-boss, creates queues and schedules, and (unless workers is false) begins working.
   * A process with workers off still accepts sends; the jobs wait for a process that works them.
   */
  async start(options: { workers?: boolean } = {}): Promise<void> {
    await this.boss.start();
    this.#started = true;
    for (const def of this.#definitions.values()) {
      await this.boss.createQueue(def.name, {
        retryLimit: 5,
        retryDelay: 5,
        retryBackoff: true,
        expireInSeconds: 15 * 60,
        ...def.queue,
      });
      if (def.cron) await this.boss.schedule(def.name, def.cron, {}, { tz: 'UTC' });
      // pg-boss caches each queue's settings on first use. Load them now (a read that finds
      // nothing): the first send inside a transaction must not need a query outside it, which on
      // PGlite's single session waits forever. Workers load it too, but a process may have none.
      await this.boss.getJobById(def.name, '00000000-0000-0000-0000-000000000000');
    }
    if (options.workers === false) return;
    for (const def of this.#definitions.values()) {
      if ((def.batchSize ?? 1) > 1) {
        await this.#workInBatches(def);
        continue;
      }
      await this.boss.work(
        def.name,
        { localConcurrency: def.concurrency ?? 1, pollingIntervalSeconds: def.pollingIntervalSeconds ?? 2, batchSize: 1 },
        async (jobs: Job<object>[]) => {
          for (const job of jobs) {
            try {
              await def.handler(job.data, job);
            } catch (err) {
              this.#log.warn({ err, job: { id: job.id, name: job.name } }, 'job failed; it will be retried per its queue policy');
              throw err;
            }
          }
        },
      );
    }
  }

  async #workInBatches(def: JobDefinition<any>): Promise<void> {
    await this.boss.work(
      def.name,
      {
        localConcurrency: def.concurrency ?? 1,
        pollingIntervalSeconds: def.pollingIntervalSeconds ?? 2,
        batchSize: def.batchSize!,
        perJobResults: true,
        burstWhenBatchFull: true,
      },
      async (jobs: Job<object>[]) => {
        const settle = (job: Job<object>, err: unknown) => {
          if (!err) return { id: job.id, status: 'completed' as const };
          this.#log.warn({ err, job: { id: job.id, name: job.name } }, 'job failed; it will be retried per its queue policy');
          return { id: job.id, status: 'failed' as const, output: { message: (err as Error).message } };
        };
        if (def.batchHandler) {
          const errors = await def.batchHandler(jobs.map((job) => job.data)).catch((err: unknown) => jobs.map(() => err));
          return jobs.map((job, i) => settle(job, errors[i]));
        }
        return Promise.all(jobs.map((job) => def.handler(job.data, job).then(() => settle(job, null), (err: unknown) => settle(job, err))));
      },
    );
  }

  async send<T extends object>(name: string, data: T, options: SendOptions = {}): Promise<string | null> {
    if (!this.#definitions.has(name)) throw new Error(`Unknown job kind ${name}`);
    const { trx, startAfter, singletonKey } = options;
    return this.boss.send(name, data, {
      ...(startAfter !== undefined ? { startAfter: startAfter instanceof Date ? startAfter : startAfter } : {}),
      ...(singletonKey ? { singletonKey } : {}),
      ...(trx ? { db: fromKysely(trx as never) } : {}),
    });
  }

  /** Jobs waiting or running, per queue: for /metrics. */
  async depth(): Promise<Array<{ queue: string; state: string; count: number }>> {
    if (!this.#started) return [];
    const out: Array<{ queue: string; state: string; count: number }> = [];
    for (const name of this.#definitions.keys()) {
      const [stats] = await this.boss.getQueueStats(name);
      if (!stats) continue;
      out.push({ queue: name, state: 'queued', count: stats.queuedCount }, { queue: name, state: 'active', count: stats.activeCount });
    }
    return out;
  }

  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    // On PostgreSQL pg-boss owns a small pool of its own, which this closes; on PGlite it was
    // handed our instance through an adapter, and pg-boss never closes a database it was given.
    await this.boss.stop({ graceful: true, timeout: 10_000, close: true });
  }
}
