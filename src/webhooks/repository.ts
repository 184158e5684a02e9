import { sql } from 'kysely';
import type { Kysely, RawBuilder } from 'kysely';
import type { WithDefaults } from '../platform/db/types.ts';
import { lookupBatcher } from '../platform/batch.ts';
import { statement } from '../platform/db/statement.ts';
import type { Cursor } from '../platform/http/pagination.ts';

export type EndpointStatus = 'ENABLED' | 'DISABLED';
export type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';
export type AttemptTrigger = 'AUTOMATIC' | 'MANUAL';

export interface EndpointRow {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  status: EndpointStatus;
  disabled_reason: string | null;
  disabled_at: Date | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  consecutive_failures: number;
  created_at: Date;
  updated_at: Date;
}

export interface StatusChangeRow {
  id: string;
  endpoint_id: string;
  organization_id: string;
  status: EndpointStatus;
  reason: string;
  detail: string | null;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  organization_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  retry_step: number;
  attempt_count: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  id: string;
  delivery_id: string;
  attempt_number: number;
  trigger: AttemptTrigger;
  status_code: number | null;
  latency_ms: number;
  response_body: string | null;
  error: string | null;
  succeeded: boolean;
  started_at: Date;
  finished_at: Date;
}

interface Tables {
  webhook_endpoints: WithDefaults<EndpointRow, 'status' | 'disabled_reason' | 'disabled_at' | 'previous_secret' | 'previous_secret_expires_at' | 'consecutive_failures' | 'created_at' | 'updated_at'>;
  webhook_endpoint_status_changes: WithDefaults<StatusChangeRow, 'created_at'>;
  webhook_deliveries: WithDefaults<DeliveryRow, 'status' | 'retry_step' | 'attempt_count' | 'last_attempt_at' | 'failure_reason' | 'created_at' | 'updated_at'>;
  webhook_delivery_attempts: AttemptRow;
}

/** A delivery together with the endpoint it goes to: what an attempt needs. */
export interface DeliveryTarget extends DeliveryRow {
  url: string;
  endpoint_status: EndpointStatus;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

type Db = Kysely<any>;
const t = (db: Db) => db as Kysely<Tables>;

const SUBSCRIBED_TYPES = statement<{ organizationIds: string[] }, { organization_id: string; types: string }>(
  (v) => sql`
    select organization_id, array_to_string(array_agg(distinct type), ' ') as types
      from webhook_endpoints, unnest(event_types) as type
     where organization_id = any(${v.organizationIds}::uuid[]) and status = 'ENABLED'
     group by organization_id`,
);

export class WebhookRepository {
  readonly #db: Kysely<Tables>;
  readonly #subscribed = lookupBatcher<string, { organization_id: string; types: string[] }>(
    async (organizationIds) => (await SUBSCRIBED_TYPES.run(this.#db, { organizationIds })).map((r) => ({ organization_id: r.organization_id, types: r.types.split(' ') })),
    (id) => id,
    (row) => row.organization_id,
  );
  constructor(db: Kysely<any>) {
    this.#db = db;
  }

  // Endpoints

  async insertEndpoint(row: Pick<EndpointRow, 'id' | 'organization_id' | 'url' | 'description' | 'event_types' | 'secret'>): Promise<EndpointRow> {
    return this.#db.insertInto('webhook_endpoints').values(row).returningAll().executeTakeFirstOrThrow();
  }

  async findEndpoint(organizationId: string, id: string, db: Db = this.#db): Promise<EndpointRow | undefined> {
    return t(db).selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  }

  async listEndpoints(organizationId: string, limit: number, after: Cursor | null): Promise<{ rows: EndpointRow[]; total: number }> {
    let q = this.#db.selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', organizationId);
    if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(new Date(after.createdAt), after.id)));
    const rows = await q.orderBy('created_at').orderBy('id').limit(limit + 1).execute();
    const count = await this.#db
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    return { rows, total: Number(count.n) };
  }

  async updateEndpoint(
    db: Db,
    organizationId: string,
    id: string,
    changes: Partial<Pick<EndpointRow, 'url' | 'description' | 'event_types' | 'status' | 'disabled_reason' | 'disabled_at' | 'consecutive_failures' | 'secret' | 'previous_secret' | 'previous_secret_expires_at'>>,
  ): Promise<EndpointRow | undefined> {
    return t(db)
      .updateTable('webhook_endpoints')
      .set({ ...changes, updated_at: new Date() })
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  }

  /**
   * Deletes an endpoint with its deliveries (and their attempts). The deliveries go first, in their
   * own statement: a delivery job locks its delivery and then the endpoint (failure count), so
   * taking the endpoint first and its deliveries through the cascade would lock in the opposite
   * order and deadlock with a job finishing at that moment.
   */
  async deleteEndpoint(db: Db, organizationId: string, id: string): Promise<boolean> {
    await t(db).deleteFrom('webhook_deliveries').where('organization_id', '=', organizationId).where('endpoint_id', '=', id).execute();
    const res = await t(db).deleteFrom('webhook_endpoints').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** Locks the endpoint row for a read-modify-write (rotation, status change). */
  async lockEndpoint(db: Db, organizationId: string, id: string): Promise<EndpointRow | undefined> {
    return t(db).selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).forUpdate().executeTakeFirst();
  }

  async insertStatusChange(db: Db, row: Omit<StatusChangeRow, 'created_at'>): Promise<void> {
    await t(db).insertInto('webhook_endpoint_status_changes').values(row).execute();
  }

  async statusChanges(endpointId: string): Promise<StatusChangeRow[]> {
    return this.#db.selectFrom('webhook_endpoint_status_changes').selectAll().where('endpoint_id', '=', endpointId).orderBy('created_at').execute();
  }

  /**
   * The event types the organization's enabled endpoints take, all of them together; producers
   * ask on every change, so concurrent asks share a statement.
   */
  async subscribedTypes(organizationId: string): Promise<string[]> {
    return (await this.#subscribed.submit(organizationId))?.types ?? [];
  }

  /** subscribedTypes() not including `refs.type`, as a guard's condition (platform/db/guard.ts). */
  unsubscribedCondition(refs: { organizationId: RawBuilder<unknown>; type: RawBuilder<unknown> }): RawBuilder<boolean> {
    return sql<boolean>`not coalesce((select true from webhook_endpoints guard_endpoint where guard_endpoint.organization_id = ${refs.organizationId} and guard_endpoint.status = 'ENABLED' and ${refs.type} = any(guard_endpoint.event_types) limit 1), false)`;
  }

  /** Enabled endpoints of the organization, with the event types each takes. */
  async enabledSubscriptions(db: Db, organizationId: string): Promise<Array<Pick<EndpointRow, 'id' | 'event_types'>>> {
    return t(db).selectFrom('webhook_endpoints').select(['id', 'event_types']).where('organization_id', '=', organizationId).where('status', '=', 'ENABLED').execute();
  }

  /** Counts one failed attempt against the endpoint; answers the new streak and the status. */
  async countFailure(db: Db, endpointId: string): Promise<{ consecutive_failures: number; status: EndpointStatus } | undefined> {
    return t(db)
      .updateTable('webhook_endpoints')
      .set((eb) => ({ consecutive_failures: eb('consecutive_failures', '+', 1) }))
      .where('id', '=', endpointId)
      .returning(['consecutive_failures', 'status'])
      .executeTakeFirst();
  }

  async resetFailures(db: Db, endpointId: string): Promise<void> {
    await t(db).updateTable('webhook_endpoints').set({ consecutive_failures: 0 }).where('id', '=', endpointId).where('consecutive_failures', '>', 0).execute();
  }

  /** Disables an enabled endpoint; false when it was already disabled (or is gone). */
  async disableIfEnabled(db: Db, endpointId: string, reason: string, at: Date): Promise<EndpointRow | undefined> {
    return t(db)
      .updateTable('webhook_endpoints')
      .set({ status: 'DISABLED', disabled_reason: reason, disabled_at: at, updated_at: at })
      .where('id', '=', endpointId)
      .where('status', '=', 'ENABLED')
      .returningAll()
      .executeTakeFirst();
  }

  // Deliveries

  async insertDeliveries(db: Db, rows: Array<Pick<DeliveryRow, 'id' | 'organization_id' | 'endpoint_id' | 'event_id' | 'event_type' | 'next_attempt_at'>>): Promise<void> {
    if (rows.length) await t(db).insertInto('webhook_deliveries').values(rows).execute();
  }

  async deliveryTarget(id: string): Promise<DeliveryTarget | undefined> {
    return this.#db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .selectAll('d')
      .select(['e.url', 'e.status as endpoint_status', 'e.secret', 'e.previous_secret', 'e.previous_secret_expires_at'])
      .where('d.id', '=', id)
      .executeTakeFirst();
  }

  async findDelivery(organizationId: string, endpointId: string, id: string): Promise<DeliveryRow | undefined> {
    return this.#db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('endpoint_id', '=', endpointId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async listDeliveries(organizationId: string, endpointId: string, limit: number, after: Cursor | null): Promise<{ rows: DeliveryRow[]; total: number }> {
    const base = this.#db.selectFrom('webhook_deliveries').where('organization_id', '=', organizationId).where('endpoint_id', '=', endpointId);
    // Newest first: what an operator looking at a failing endpoint wants to see.
    let q = base.selectAll();
    if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(new Date(after.createdAt), after.id)));
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute();
    const count = await base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    return { rows, total: Number(count.n) };
  }

  async attemptsOf(deliveryIds: string[]): Promise<AttemptRow[]> {
    if (!deliveryIds.length) return [];
    return this.#db.selectFrom('webhook_delivery_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('attempt_number').execute();
  }

  /**
   * Numbers a new attempt and locks the delivery until the transaction ends, so two attempts of
   * one delivery are recorded one after the other. Answers the state before this attempt's outcome.
   */
  async numberAttempt(db: Db, deliveryId: string, at: Date): Promise<Pick<DeliveryRow, 'attempt_count' | 'status' | 'retry_step' | 'endpoint_id'> | undefined> {
    return t(db)
      .updateTable('webhook_deliveries')
      .set((eb) => ({ attempt_count: eb('attempt_count', '+', 1), last_attempt_at: at, updated_at: at }))
      .where('id', '=', deliveryId)
      .returning(['attempt_count', 'status', 'retry_step', 'endpoint_id'])
      .executeTakeFirst();
  }

  async insertAttempt(db: Db, row: AttemptRow): Promise<void> {
    await t(db).insertInto('webhook_delivery_attempts').values(row).execute();
  }

  async updateDelivery(db: Db, id: string, changes: Partial<Pick<DeliveryRow, 'status' | 'retry_step' | 'next_attempt_at' | 'failure_reason'>>): Promise<void> {
    await t(db).updateTable('webhook_deliveries').set({ ...changes, updated_at: new Date() }).where('id', '=', id).execute();
  }

  /** Deletes finished deliveries last changed before the cutoff (attempts go with them), in chunks. */
  async deleteFinishedBefore(cutoff: Date, chunk = 5000): Promise<number> {
    let removed = 0;
    for (;;) {
      const res = await this.#db
        .deleteFrom('webhook_deliveries')
        .where('id', 'in', (eb) =>
          eb.selectFrom('webhook_deliveries').select('id').where('status', '<>', 'PENDING').where('updated_at', '<', cutoff).limit(chunk),
        )
        .executeTakeFirst();
      const n = Number(res.numDeletedRows);
      removed += n;
      if (n < chunk) return removed;
    }
  }

  /** Ends a pending delivery without an attempt (its endpoint was disabled meanwhile). */
  async failPending(id: string, reason: string): Promise<void> {
    await this.#db
      .updateTable('webhook_deliveries')
      .set({ status: 'FAILED', failure_reason: reason, next_attempt_at: null, updated_at: new Date() })
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  }
}
