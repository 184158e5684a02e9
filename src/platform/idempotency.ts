// Idempotency-Key handling (DECISIONS.md §5), shared by every endpoint that creates something.
// The key is claimed in the same transaction as the work and its stored response. A concurrent
// request with the same key therefore waits on the claim's row lock and, once the first commits,
// replays its response: 50 identical concurrent requests all answer with the same resource. If
// the first takes longer than the lock timeout, the waiter answers 409
// idempotency_request_in_progress. A failed first attempt rolls back its claim, so nothing
// half-done is ever replayed and the key can be retried.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import { ApiError } from './http/errors.ts';
import type { WithDefaults } from './db/types.ts';
import { lookupBatcher } from './batch.ts';
import { JsonText, encodeRows, insertRows } from './db/recordset.ts';
import type { StatementPart } from './db/recordset.ts';

export interface StoredResponse<T> {
  status: number;
  body: T;
  replayed: boolean;
}

interface IdempotencyRow {
  organization_id: string;
  operation: string;
  idempotency_key: string;
  request_hash: string;
  state: 'IN_PROGRESS' | 'COMPLETED';
  response_status: number | null;
  response_body: unknown;
  created_at: Date;
  locked_until: Date;
  expires_at: Date;
}
interface Tables {
  idempotency_records: WithDefaults<IdempotencyRow, 'created_at'>;
}

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** A lock wait ran past lock_timeout. */
export const LOCK_NOT_AVAILABLE = '55P03';

/** Stable hash of a request body: key order does not matter, values do. */
export function requestFingerprint(value: unknown): string {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
    return v;
  };
  return createHash('sha256').update(JSON.stringify(canonical(value) ?? null)).digest('hex');
}

export function requireIdempotencyKey(header: string | string[] | undefined): string {
  const key = Array.isArray(header) ? header[0] : header;
  if (!key) throw new ApiError(400, 'idempotency_key_required', 'This request needs an Idempotency-Key header');
  if (!KEY_PATTERN.test(key)) throw new ApiError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 printable ASCII characters');
  return key;
}

export interface IdempotencyScope {
  organizationId: string;
  operation: string;
  key: string;
  requestHash: string;
}

/** A response to keep under its key, written by the caller's statement together with the work it answers. */
export interface CompletedResponse {
  scope: IdempotencyScope;
  status: number;
  /** The body as the JSON text that was sent. */
  body: string;
}

const scopeKey = (s: Pick<IdempotencyScope, 'organizationId' | 'operation' | 'key'>) => `${s.organizationId}\n${s.operation}\n${s.key}`;

export class IdempotencyStore {
  readonly #db: Kysely<Tables>;
  readonly #ttlHours: number;
  readonly #waitMs: number;
  // A request looks its key up when something stands in its way (stored()); concurrent lookups share a statement.
  readonly #records = lookupBatcher<IdempotencyScope, IdempotencyRow>(
    (scopes) =>
      this.#db
        .selectFrom('idempotency_records')
        .selectAll()
        .where(
          sql<boolean>`organization_id = any(${scopes.map((s) => s.organizationId)}::uuid[]) and idempotency_key = any(${scopes.map((s) => s.key)}::text[])
            and (organization_id, operation, idempotency_key) in (select * from unnest(${scopes.map((s) => s.organizationId)}::uuid[], ${scopes.map((s) => s.operation)}::text[], ${scopes.map((s) => s.key)}::text[]))`,
        )
        .execute(),
    scopeKey,
    (row) => scopeKey({ organizationId: row.organization_id, operation: row.operation, key: row.idempotency_key }),
  );

  /** waitMs: how long a duplicate waits for the first request before answering in_progress. */
  constructor(db: Kysely<any>, ttlHours: number, waitMs = 10_000) {
    this.#db = db;
    this.#ttlHours = ttlHours;
    this.#waitMs = waitMs;
  }

  /**
   * Runs `work` once per (organization, operation, key). A replay with the same request gets the
   * stored status and body; a different request under the same key is refused.
   */
  async run<T>(scope: IdempotencyScope, work: (trx: Transaction<any>) => Promise<{ status: number; body: T }>): Promise<StoredResponse<T>> {
    try {
      return await this.#db.transaction().execute(async (trx) => {
        const now = new Date();
        const claimed = await trx
          .insertInto('idempotency_records')
          .values({
            organization_id: scope.organizationId,
            operation: scope.operation,
            idempotency_key: scope.key,
            request_hash: scope.requestHash,
            state: 'IN_PROGRESS',
            response_status: null,
            response_body: null,
            // A duplicate waits on this claim for the first request; lock_timeout (for this
            // transaction, like SET LOCAL) bounds that wait. It is set by the claim's own VALUES,
            // which run before the row is inserted, saving a round trip on every request.
            locked_until: sql<Date>`(select ${now}::timestamptz where set_config('lock_timeout', ${String(Math.max(1, Math.floor(this.#waitMs)))}, true) is not null)`,
            expires_at: new Date(now.getTime() + this.#ttlHours * 3600 * 1000),
          })
          .onConflict((oc) => oc.columns(['organization_id', 'operation', 'idempotency_key']).doNothing())
          .returning('state')
          .executeTakeFirst();

        if (!claimed) {
          const existing = await trx
            .selectFrom('idempotency_records')
            .selectAll()
            .where('organization_id', '=', scope.organizationId)
            .where('operation', '=', scope.operation)
            .where('idempotency_key', '=', scope.key)
            .executeTakeFirstOrThrow();
          return answerOf<T>(existing, scope);
        }

        const result = await work(trx as Transaction<any>);
        await trx
          .updateTable('idempotency_records')
          .set({ state: 'COMPLETED', response_status: result.status, response_body: JSON.stringify(result.body) })
          .where('organization_id', '=', scope.organizationId)
          .where('operation', '=', scope.operation)
          .where('idempotency_key', '=', scope.key)
          .execute();
        return { ...result, replayed: false };
      });
    } catch (err) {
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) throw requestInProgress();
      throw err;
    }
  }

  /**
   * How long a duplicate may wait for the request holding what it needs (its key, or what the
   * work takes) before it answers 409 idempotency_request_in_progress: work that claims its key
   * by completing bounds its own lock waits with it (see completedPart).
   */
  get waitMs(): number {
    return this.#waitMs;
  }

  /**
   * What the key already answers, read outside any transaction: null when it is free, the stored
   * response when the same request completed under it; 409 idempotency_key_reused for a different
   * request, 409 idempotency_request_in_progress while one still holds it.
   */
  async stored<T>(scope: IdempotencyScope): Promise<StoredResponse<T> | null> {
    const existing = await this.#records.submit(scope);
    return existing ? answerOf<T>(existing, scope) : null;
  }

  /**
   * Keeps completed responses, for work that claims its key by completing: the insert of their
   * records as a part of the statement that writes the work itself. A key already taken fails
   * that statement with a unique violation (isKeyTaken), so the work written beside it is not
   * kept either.
   */
  completedPart(responses: CompletedResponse[]): StatementPart {
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.#ttlHours * 3600 * 1000);
    const rows = responses.map((r) => ({
      organization_id: r.scope.organizationId,
      operation: r.scope.operation,
      idempotency_key: r.scope.key,
      request_hash: r.scope.requestHash,
      state: 'COMPLETED',
      response_status: r.status,
      response_body: new JsonText(r.body),
      created_at: now,
      locked_until: now,
      expires_at: expiresAt,
    }));
    return { name: 'idempotency_records', rows: encodeRows(rows, RECORD_COLUMNS), sql: insertCompleted };
  }

  /** Deletes records past their retention; run by the periodic job. */
  async prune(now = new Date()): Promise<number> {
    const result = await this.#db.deleteFrom('idempotency_records').where('expires_at', '<', now).executeTakeFirst();
    return Number(result.numDeletedRows ?? 0);
  }
}

/** What a key already taken answers this request: its replay, or 409 for a different or unfinished one. */
function answerOf<T>(existing: IdempotencyRow, scope: IdempotencyScope): StoredResponse<T> {
  if (existing.request_hash !== scope.requestHash) {
    throw new ApiError(409, 'idempotency_key_reused', 'This Idempotency-Key was already used for a different request');
  }
  if (existing.state !== 'COMPLETED') throw requestInProgress();
  return { status: existing.response_status!, body: existing.response_body as T, replayed: true };
}

/** The error a completedPart() statement fails with when a key was taken by another request first. */
export function isKeyTaken(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && e.constraint === 'idempotency_records_pkey';
}

const insertCompleted = (rows: unknown) => insertRows('idempotency_records', rows, RECORD_COLUMNS);

const RECORD_COLUMNS = {
  organization_id: 'uuid',
  operation: 'text',
  idempotency_key: 'text',
  request_hash: 'text',
  state: 'text',
  response_status: 'integer',
  response_body: 'json',
  created_at: 'timestamptz',
  locked_until: 'timestamptz',
  expires_at: 'timestamptz',
} as const;

/** 409 idempotency_request_in_progress: another request with the key is still running. */
export const requestInProgress = () => new ApiError(409, 'idempotency_request_in_progress', 'A request with this Idempotency-Key is still being processed; retry shortly');
