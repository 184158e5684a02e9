// The one place that knows whether we run on embedded PGlite or on a PostgreSQL server.
// Everything above this file sees a Kysely instance and the same JS types from both engines.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely';
import type { DatabaseConnection, Driver, TransactionSettings } from 'kysely';
import { Mutex } from './mutex.ts';

export type Engine = 'pglite' | 'postgres';

// Type parsing shared by both engines: big integers and numerics stay strings (money and counts
// never pass through a float), timestamps become Date, dates stay 'YYYY-MM-DD'.
const OID = { int8: 20, numeric: 1700, date: 1082, timestamp: 1114, timestamptz: 1184 } as const;
const identity = (value: string) => value;
const toDate = (value: string) => new Date(value.includes('T') || value.endsWith('Z') || /[+-]\d\d(:?\d\d)?$/.test(value) ? value : `${value}Z`);
const SHARED_PARSERS: Record<number, (value: string) => unknown> = {
  [OID.int8]: identity,
  [OID.numeric]: identity,
  [OID.date]: identity,
  [OID.timestamp]: toDate,
  [OID.timestamptz]: (value: string) => new Date(value),
};

export interface Database {
  readonly engine: Engine;
  /** The server connection string; null on PGlite. */
  readonly url: string | null;
  readonly kysely: Kysely<any>;
  /** The embedded instance, for pg-boss's PGlite adapter; null on PostgreSQL. */
  readonly pglite: PGlite | null;
  /** The server pool; null on PGlite. */
  readonly pool: pg.Pool | null;
  /** Runs a multi-statement SQL script in one transaction (migrations). */
  execScript(script: string): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Wraps Kysely's PGlite driver so that only one query or transaction holds the single PGlite
 * session at a time. Without it, a query from request B issued while request A's transaction is
 * open would run inside A's transaction.
 */
class SerializedDriver implements Driver {
  readonly #inner: Driver;
  readonly #mutex = new Mutex();
  readonly #releases = new Map<DatabaseConnection, Array<() => void>>();

  constructor(inner: Driver) {
    this.#inner = inner;
  }
  init() {
    return this.#inner.init();
  }
  async acquireConnection() {
    const release = await this.#mutex.lock();
    const connection = await this.#inner.acquireConnection();
    const stack = this.#releases.get(connection) ?? [];
    stack.push(release);
    this.#releases.set(connection, stack);
    return connection;
  }
  async releaseConnection(connection: DatabaseConnection) {
    await this.#inner.releaseConnection(connection);
    this.#releases.get(connection)?.shift()?.();
  }
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    return this.#inner.beginTransaction(connection, settings);
  }
  commitTransaction(connection: DatabaseConnection) {
    return this.#inner.commitTransaction(connection);
  }
  rollbackTransaction(connection: DatabaseConnection) {
    return this.#inner.rollbackTransaction(connection);
  }
  savepoint(...args: Parameters<NonNullable<Driver['savepoint']>>) {
    return this.#inner.savepoint!(...args);
  }
  rollbackToSavepoint(...args: Parameters<NonNullable<Driver['rollbackToSavepoint']>>) {
    return this.#inner.rollbackToSavepoint!(...args);
  }
  releaseSavepoint(...args: Parameters<NonNullable<Driver['releaseSavepoint']>>) {
    return this.#inner.releaseSavepoint!(...args);
  }
  destroy() {
    return this.#inner.destroy();
  }
}

class SerializedPGliteDialect extends PGliteDialect {
  override createDriver(): Driver {
    return new SerializedDriver(super.createDriver());
  }
}

export interface OpenDatabaseOptions {
  /** PostgreSQL connection string; when absent the embedded engine is used. */
  url?: string | null;
  /** Directory for PGlite files; null keeps the embedded database in memory (tests). */
  dataDir?: string | null;
  poolSize?: number;
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (options.url) return openPostgres(options.url, options.poolSize ?? 10);
  return openPGlite(options.dataDir ?? null);
}

async function openPGlite(dataDir: string | null): Promise<Database> {
  const pglite = await PGlite.create({
    ...(dataDir ? { dataDir: path.join(dataDir, 'pgdata') } : {}),
    parsers: SHARED_PARSERS,
  });
  const kysely = new Kysely<any>({ dialect: new SerializedPGliteDialect({ pglite }) });
  return {
    engine: 'pglite',
    url: null,
    kysely,
    pglite,
    pool: null,
    async execScript(script) {
      await pglite.transaction(async (tx) => {
        await tx.exec(script);
      });
    },
    async ping() {
      if (pglite.closed) throw new Error('embedded database is closed');
      await sql`select 1`.execute(kysely);
    },
    async close() {
      await kysely.destroy();
    },
  };
}

/**
 * SQL that starts with this comment is planned on every run, never kept as a prepared statement.
 * A prepared statement's generic plan is made once, after five runs, from the tables' sizes then:
 * a lookup first run while its table was nearly empty keeps a sequential scan as the table grows
 * (on a new database, a minute can pass before autovacuum's ANALYZE has it planned again). A batch
 * lookup runs once for many requests, so planning it each time costs little.
 */
export const PLAN_EACH_RUN = '/* plan each run */ ';

/**
 * Names of server-side prepared statements, by SQL text. An unnamed parameterized query is parsed,
 * analysed and planned on every run; for the short queries of a request that was most of the
 * server's work (the API-key lookup and the transfer read of GET /v1/transfers/{id} cost four
 * times more unnamed than prepared). Naming them lets each connection parse once and reuse the
 * plan. Bounded, so SQL with a varying shape (IN lists, multi-row inserts) cannot grow every
 * connection's statement cache without limit: past the bound, queries run unnamed as before.
 */
class StatementNames {
  readonly #names = new Map<string, string>();
  readonly #max: number;
  #generation = 0;
  constructor(max: number) {
    this.#max = max;
  }
  nameOf(text: string): string | undefined {
    if (text.startsWith(PLAN_EACH_RUN)) return undefined;
    const known = this.#names.get(text);
    if (known !== undefined || this.#names.size >= this.#max) return known;
    const name = `c${this.#generation}_${createHash('sha1').update(text).digest('base64url')}`;
    this.#names.set(text, name);
    return name;
  }
  /**
   * A prepared statement whose result columns changed under it (a migration run by a newer
   * process sharing the database) fails with 0A000 until it is prepared again; forgetting every
   * name makes the following queries prepare fresh statements under new names.
   */
  forget(): void {
    this.#names.clear();
    this.#generation++;
  }
}

const PREPARED_STATEMENT_LIMIT = 1000;

function prepareOnConnection(client: pg.PoolClient, statements: StatementNames): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const [text, values] = args;
    // Parameterless text stays on the simple protocol (scripts, BEGIN/COMMIT, several statements).
    if (typeof text !== 'string' || !Array.isArray(values) || !values.length || typeof args[2] === 'function') return query(...args);
    const name = statements.nameOf(text);
    if (!name) return query(text, values);
    return (query({ name, text, values }) as Promise<unknown>).catch((err: { code?: string; message?: string }) => {
      if (!(err?.code === '0A000' && /cached plan must not change result type/.test(err.message ?? ''))) throw err;
      statements.forget();
      // Outside a transaction nothing was lost: run it again, prepared afresh. Inside one the
      // transaction is already aborted, so the error stands (once per statement and process).
      if ((client as unknown as { getTransactionStatus(): string | null }).getTransactionStatus() !== 'I') throw err;
      return query({ name: statements.nameOf(text), text, values });
    });
  };
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const statements = new StatementNames(PREPARED_STATEMENT_LIMIT);
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 5000,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        SHARED_PARSERS[oid] ?? pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its server connection must not crash the process.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    // pg-pool drops its own error listener while a client is checked out, so a connection lost
    // between two statements of a transaction (a failover, pg_terminate_backend) would surface
    // as an uncaught exception. The next statement on that client fails instead, its transaction
    // rolls back, and the pool discards the client when it is released.
    client.on('error', () => {});
    prepareOnConnection(client, statements);
  });
  const kysely = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  return {
    engine: 'postgres',
    url,
    kysely,
    pglite: null,
    pool,
    async execScript(script) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(script);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async ping() {
      await sql`select 1`.execute(kysely);
    },
    async close() {
      await kysely.destroy();
    },
  };
}
