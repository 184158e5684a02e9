// The stack floor: a server on Corridor's own stack (Fastify 5 with TypeBox schemas, Kysely over
// node-postgres opened by src/platform/db, HTTPS with a self-signed certificate from
// src/platform/http/tls.ts) that runs the statements of a quote + transfer creation and nothing
// else: no path search, no pricing, no view building, no setup job, no logging. It writes the
// rows Corridor wrote (copies of a quote, its options, a transfer, its legs, its first timeline
// item, its event and idempotency record, with new ids) into the tables Corridor's migrations
// made. What it reaches is the most any implementation on this stack can reach with that many
// statements on this machine; the transfers scenario measures it in the same run as Corridor.
//
// Run by bench/scenarios/transfers.ts as a child process:
//   DATABASE_URL=... FLOOR_SHAPE=corridor|fewest node bench/stack-floor.ts
// It prints "listening on <url> key <api key lookup id>" followed by a blank line.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { sql } from 'kysely';
import type { Transaction } from 'kysely';
import { Type } from 'typebox';
import { openDatabase } from '../src/platform/db/database.ts';
import { loadTls } from '../src/platform/http/tls.ts';
import { creationTemplate, writableColumns } from './creation-template.ts';
import type { Query } from './creation-template.ts';

/**
 * corridor: the statements Corridor runs for one creation (traced with log_statement=all), in
 * its order. fewest: the statements the guarantees cannot do without when each write is one
 * statement: the API key read and the quote insert; the API key read, then in one transaction
 * the idempotency record, the option taken, the transfer with its legs and timeline item, the
 * outbox event and the stored response. single: each request's writes as one statement (the
 * transfer's a chain of data-modifying CTEs, its idempotency record written whole), so a
 * creation is four statements in all and no explicit transaction.
 */
type Shape = 'corridor' | 'fewest' | 'single';
const shape = (process.env.FLOOR_SHAPE ?? 'corridor') as Shape;
if (!['corridor', 'fewest', 'single'].includes(shape)) throw new Error(`FLOOR_SHAPE must be corridor, fewest or single, not ${shape}`);

const database = await openDatabase({ url: process.env.DATABASE_URL! });
const db = database.kysely;

type Row = Record<string, unknown>;

// Setup reads go straight to the pool (the floor runs on PostgreSQL only); requests use Kysely.
const query: Query = async <R>(text: string, values: unknown[] = []) => (await database.pool!.query(text, values)).rows as R[];

/** A template row, ready to be copied with new values for some columns. */
async function template(table: string, where: string, value: unknown): Promise<(changes: Row) => Row> {
  const columns = await writableColumns(query, table);
  const row = await db.selectFrom(table).selectAll().where(where, '=', value).limit(1).executeTakeFirstOrThrow();
  const base: Row = {};
  for (const name of columns.names) base[name] = columns.json.has(name) && row[name] !== null ? JSON.stringify(row[name]) : row[name];
  return (changes) => ({ ...base, ...changes });
}

const copied = await creationTemplate(query);
const quote = await template('quotes', 'id', copied.quoteId);
const options = await Promise.all(copied.optionIds.map((id) => template('quote_options', 'id', id)));
const transfer = await template('transfers', 'id', copied.transferId);
const legs = await Promise.all(copied.legIds.map((id) => template('transfer_legs', 'id', id)));
const timelineItem = await template('transfer_events', 'id', copied.timelineItemId);
const event = await template('events', 'id', copied.eventId);
const idempotency = await template('idempotency_records', 'operation', 'POST /v1/transfers');

async function authenticate(lookupId: string): Promise<{ organization_id: string }> {
  return (await db
    .selectFrom('api_keys')
    .innerJoin('organizations', 'organizations.id', 'api_keys.organization_id')
    .select(['api_keys.id', 'api_keys.organization_id', 'api_keys.secret_hash', 'api_keys.revoked_at', sql<string>`array_to_string(api_keys.scopes, ' ')`.as('scopes')])
    .where('api_keys.lookup_id', '=', lookupId)
    .executeTakeFirstOrThrow());
}

const readEntity = (org: string, id: string) => db.selectFrom('entities').selectAll().where('id', '=', id).where('organization_id', '=', org).executeTakeFirstOrThrow();
const readDestination = (org: string, type: string, id: string) =>
  db
    .selectFrom('destinations as d')
    .innerJoin('destination_versions as v', (j) => j.onRef('v.destination_id', '=', 'd.id').onRef('v.version', '=', 'd.version'))
    .selectAll('d')
    .select(['v.relationship', 'v.rail', 'v.instructions'])
    .where('d.organization_id', '=', org)
    .where('d.kind', '=', type)
    .where('d.id', '=', id)
    .executeTakeFirstOrThrow();

const tls = await loadTls({ certPath: null, keyPath: null, dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-floor-')), host: '127.0.0.1' });
const app = Fastify({ https: { key: tls.key, cert: tls.cert } });

const QuoteBody = Type.Object({ entityId: Type.String(), amount: Type.String(), destinationFiatAccountId: Type.String() }, { additionalProperties: true });
app.post('/v1/quotes', { schema: { body: QuoteBody } }, async (request, reply) => {
  const body = request.body as { entityId: string; amount: string; destinationFiatAccountId: string };
  const { organization_id: org } = await authenticate(request.headers['x-api-key'] as string);
  if (shape === 'corridor') {
    await readEntity(org, body.entityId);
    await readDestination(org, 'FIAT_ACCOUNT', body.destinationFiatAccountId);
  }
  const quoteId = randomUUID();
  const rows = options.map((o) => o({ id: randomUUID(), quote_id: quoteId, organization_id: org }));
  await db
    .with('new_quote', (qb) => qb.insertInto('quotes').values(quote({ id: quoteId, organization_id: org, amount: body.amount })).returning('id'))
    .insertInto('quote_options')
    .values(rows)
    .returningAll()
    .execute();
  return reply.code(201).send({ id: quoteId, options: rows.map((r) => ({ id: r.id })) });
});

const TransferBody = Type.Object({ quoteOptionId: Type.String(), entityId: Type.String(), destination: Type.Object({ fiatAccountId: Type.String() }, { additionalProperties: true }) });
app.post('/v1/transfers', { schema: { body: TransferBody } }, async (request, reply) => {
  const body = request.body as { quoteOptionId: string; entityId: string; destination: { fiatAccountId: string } };
  const idempotencyKey = request.headers['idempotency-key'] as string;
  const { organization_id: org } = await authenticate(request.headers['x-api-key'] as string);
  if (shape === 'corridor') {
    await readEntity(org, body.entityId);
    await db.selectFrom('quote_options as o').innerJoin('quotes as q', 'q.id', 'o.quote_id').selectAll('o').select(['q.entity_id', 'q.destination_id']).where('o.organization_id', '=', org).where('o.id', '=', body.quoteOptionId).executeTakeFirstOrThrow();
    await readDestination(org, 'FIAT_ACCOUNT', body.destination.fiatAccountId);
  }
  const id = randomUUID();
  const response = { id, status: 'PENDING_SETUP' };
  if (shape === 'single') {
    await db
      .with('stored', (qb) =>
        qb.insertInto('idempotency_records').values(idempotency({ organization_id: org, idempotency_key: idempotencyKey, state: 'COMPLETED', response_status: 201, response_body: JSON.stringify(response) })).returning('idempotency_key'),
      )
      .with('taken', (qb) => qb.updateTable('quote_options').set({ status: 'USED' }).where('id', '=', body.quoteOptionId).where('status', '=', 'OPEN').returning('id'))
      .with('new_transfer', (qb) => qb.insertInto('transfers').values(transfer({ id, organization_id: org, quote_option_id: body.quoteOptionId })).returning('id'))
      .with('new_legs', (qb) => qb.insertInto('transfer_legs').values(legs.map((l) => l({ id: randomUUID(), transfer_id: id }))).returning('id'))
      .with('timeline_item', (qb) => qb.insertInto('transfer_events').values(timelineItem({ id: randomUUID(), transfer_id: id, organization_id: org })).returning('id'))
      .insertInto('events')
      .values(event({ id: randomUUID(), organization_id: org }))
      .execute();
    return reply.code(201).send(response);
  }
  await db.transaction().execute(async (trx: Transaction<any>) => {
    await trx.insertInto('idempotency_records').values(idempotency({ organization_id: org, idempotency_key: idempotencyKey, state: 'IN_PROGRESS', response_status: null, response_body: null })).execute();
    await trx.updateTable('quote_options').set({ status: 'USED' }).where('id', '=', body.quoteOptionId).where('status', '=', 'OPEN').returning('id').executeTakeFirstOrThrow();
    await trx
      .with('new_transfer', (qb) => qb.insertInto('transfers').values(transfer({ id, organization_id: org, quote_option_id: body.quoteOptionId })).returning('id'))
      .with('new_legs', (qb) => qb.insertInto('transfer_legs').values(legs.map((l) => l({ id: randomUUID(), transfer_id: id }))).returning('id'))
      .insertInto('transfer_events')
      .values(timelineItem({ id: randomUUID(), transfer_id: id, organization_id: org }))
      .execute();
    await trx.insertInto('events').values(event({ id: randomUUID(), organization_id: org })).execute();
    if (shape === 'corridor') await trx.selectFrom('webhook_endpoints').select(['id', 'event_types']).where('organization_id', '=', org).where('status', '=', 'ENABLED').execute();
    await trx
      .updateTable('idempotency_records')
      .set({ state: 'COMPLETED', response_status: 201, response_body: JSON.stringify(response) })
      .where('organization_id', '=', org)
      .where('operation', '=', 'POST /v1/transfers')
      .where('idempotency_key', '=', idempotencyKey)
      .execute();
  });
  return reply.code(201).send(response);
});

await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address() as { port: number };
process.stdout.write(`listening on https://127.0.0.1:${address.port} key ${copied.apiKeyLookupId}\n\n`);
process.once('SIGTERM', () => {
  void app.close().then(() => database.close()).then(() => process.exit(0));
});
