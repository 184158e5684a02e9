import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import type { EventType } from './service.ts';

describe('events API', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  const record = (org: TestOrganization, data: Record<string, unknown> = {}, type: EventType = 'transfer.status_changed') =>
    t.server.db.kysely.transaction().execute((trx) =>
      t.server.services.events.record(trx, {
        organizationId: org.organizationId,
        type,
        data: { transferId: randomUUID(), status: 'IN_REVIEW', previousStatus: 'AWAITING_FUNDS', blockingParty: 'SERVICE_OPS', version: 3, ...data },
      }),
    );

  // GET /v1/events shows an event once every transaction older than it has ended anywhere on
  // the server, and other test files share that server: wait for that before reading.
  const settled = async () => {
    for (let i = 0; i < 1200; i++) {
      const { rows } = await sql<{ ok: boolean }>`select coalesce(max(transaction_id), '0'::xid8) < pg_snapshot_xmin(pg_current_snapshot()) as ok from events`.execute(t.server.db.kysely);
      if (rows[0]!.ok) return;
      await sleep(50);
    }
    throw new Error('recorded events never became visible to readers');
  };

  test('GET /v1/events pages through the caller organization in order, after a given event', async () => {
    const a = await t.newOrganization();
    const b = await t.newOrganization();
    const ours = [];
    for (let i = 0; i < 5; i++) ours.push(await record(a, { version: i + 1 }));
    const theirs = [await record(b), await record(b)];
    await settled();

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await t.request('GET', `/v1/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { apiKey: a.apiKey });
      assert.equal(res.status, 200, res.text);
      seen.push(...res.body.data.map((e: any) => e.id));
      if (pages === 0) assert.equal(res.body.meta.total, 5);
      cursor = res.body.meta.nextCursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, ours.map((e) => e.id));

    const rest = await t.request('GET', `/v1/events?after=${ours[2]!.id}`, { apiKey: a.apiKey });
    assert.deepEqual(rest.body.data.map((e: any) => e.id), [ours[3]!.id, ours[4]!.id]);
    assert.equal(rest.body.meta.total, 2);
    assert.equal(rest.body.meta.nextCursor, null);
    // A page that ends exactly at the last event says so: no cursor to an empty page.
    const exact = await t.request('GET', `/v1/events?after=${ours[2]!.id}&limit=2`, { apiKey: a.apiKey });
    assert.deepEqual(exact.body.data.map((e: any) => e.id), [ours[3]!.id, ours[4]!.id]);
    assert.equal(exact.body.meta.nextCursor, null);
    const caughtUp = await t.request('GET', `/v1/events?after=${ours[4]!.id}`, { apiKey: a.apiKey });
    assert.deepEqual(caughtUp.body, { data: [], meta: { total: 0, nextCursor: null } });

    const first = (await t.request('GET', '/v1/events?limit=1', { apiKey: a.apiKey })).body.data[0];
    assert.deepEqual(first, {
      id: ours[0]!.id,
      type: 'transfer.status_changed',
      createdAt: ours[0]!.createdAt.toISOString(),
      data: { transferId: ours[0]!.data.transferId, status: 'IN_REVIEW', previousStatus: 'AWAITING_FUNDS', blockingParty: 'SERVICE_OPS', version: 1 },
    });
    assert.match(first.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const other = await t.request('GET', '/v1/events', { apiKey: b.apiKey });
    assert.deepEqual(other.body.data.map((e: any) => e.id), theirs.map((e) => e.id));
    // Another organization's event id is not a place to continue from.
    const foreign = await t.request('GET', `/v1/events?after=${theirs[0]!.id}`, { apiKey: a.apiKey });
    assert.equal(foreign.status, 422);
    assert.equal(foreign.body.code, 'validation_error');
    assert.deepEqual(foreign.body.details.map((d: any) => d.path), ['query.after']);
    // The same position sent as cursor= is named as the client sent it.
    const foreignCursor = await t.request('GET', `/v1/events?cursor=${theirs[0]!.id}`, { apiKey: a.apiKey });
    assert.equal(foreignCursor.status, 422);
    assert.deepEqual(foreignCursor.body.details, [{ path: 'query.cursor', message: 'no event with this id in your organization' }]);
  });

  test('GET /v1/events/{id} answers the event; another organization gets 404', async () => {
    const a = await t.newOrganization();
    const b = await t.newOrganization();
    const event = await record(a, { leg: { position: 2, status: 'IN_PROGRESS', progressStage: 'SENT' } }, 'transfer.leg_status_changed');
    const res = await t.request('GET', `/v1/events/${event.id}`, { token: a.token });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      id: event.id,
      type: 'transfer.leg_status_changed',
      createdAt: event.createdAt.toISOString(),
      data: { ...event.data, leg: { position: 2, status: 'IN_PROGRESS', progressStage: 'SENT' } },
    });
    for (const [org, id] of [[b, event.id], [a, randomUUID()]] as const) {
      const missing = await t.request('GET', `/v1/events/${id}`, { apiKey: org.apiKey });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.code, 'not_found');
    }
    assert.equal((await t.request('GET', '/v1/events/not-a-uuid', { apiKey: a.apiKey })).status, 422);
    assert.equal((await t.request('GET', `/v1/events/${event.id}`)).status, 401);
  });

  test('events keep only their documented fields: no provider credentials or raw provider payloads', async () => {
    const a = await t.newOrganization();
    const event = await record(
      a,
      { providerResponse: { raw: '<xml>…</xml>' }, apiKey: 'sk_live_leak', leg: { position: 1, status: 'FAILED', progressStage: null, credentials: 'x' } },
      'transfer.leg_status_changed',
    );
    const res = await t.request('GET', `/v1/events/${event.id}`, { apiKey: a.apiKey });
    assert.deepEqual(Object.keys(res.body.data).sort(), ['blockingParty', 'leg', 'previousStatus', 'status', 'transferId', 'version']);
    assert.deepEqual(res.body.data.leg, { position: 1, status: 'FAILED', progressStage: null });
    const stored = await t.server.db.kysely.selectFrom('events').select('data').where('id', '=', event.id).executeTakeFirstOrThrow();
    assert.doesNotMatch(JSON.stringify(stored.data), /sk_live_leak|xml|credentials/);
    // A leg belongs to leg events only: a status event never carries one.
    const status = await record(a, { leg: { position: 1, status: 'FAILED', progressStage: null } }, 'transfer.status_changed');
    const shown = await t.request('GET', `/v1/events/${status.id}`, { apiKey: a.apiKey });
    assert.equal(shown.body.data.leg, undefined);
  });

  // PGlite has one session, so two transactions can never be open at once there.
  test('a reader catching up never skips an event whose transaction committed after a later one', { skip: !process.env.TEST_DATABASE_URL && 'needs concurrent transactions (PostgreSQL)' }, async () => {
    const a = await t.newOrganization();
    const before = await record(a);
    let recorded!: () => void;
    const earlyRecorded = new Promise<void>((resolve) => (recorded = resolve));
    let commit!: () => void;
    const mayCommit = new Promise<void>((resolve) => (commit = resolve));
    let early: { id: string } | undefined;
    // The early transaction takes the lower sequence number but commits last.
    const slow = t.server.db.kysely.transaction().execute(async (trx) => {
      early = await t.server.services.events.record(trx, { organizationId: a.organizationId, type: 'transfer.status_changed', data: { version: 1 } });
      recorded();
      await mayCommit;
    });
    await earlyRecorded;
    const late = await record(a);

    const read = async (after: string) => (await t.request('GET', `/v1/events?after=${after}`, { apiKey: a.apiKey })).body.data.map((e: any) => e.id) as string[];
    const firstRead = await read(before.id);
    commit();
    await slow;
    await settled();
    const position = firstRead.at(-1) ?? before.id;
    const secondRead = await read(position);
    assert.deepEqual([...firstRead, ...secondRead].sort(), [early!.id, late.id].sort(), `first read ${firstRead}, then ${secondRead}`);
    assert.deepEqual(await read(before.id), [early!.id, late.id]);
  });
});
