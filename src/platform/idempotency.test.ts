import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { IdempotencyStore, requestFingerprint, requireIdempotencyKey } from './idempotency.ts';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';

describe('idempotency store', () => {
  let t: TestServer;
  let orgId: string;
  before(async () => {
    t = await startTestServer();
    orgId = (await t.newOrganization()).organizationId;
  });
  after(async () => t.close());

  const scope = (key: string, body: unknown) => ({ organizationId: orgId, operation: 'POST /test', key, requestHash: requestFingerprint(body) });

  test('a replay returns the stored response and does not run the work again', async () => {
    const store = t.server.services.idempotency;
    let runs = 0;
    const work = async () => ({ status: 201, body: { id: randomUUID(), run: ++runs } });
    const first = await store.run(scope('k1', { a: 1, b: 2 }), work);
    const second = await store.run(scope('k1', { b: 2, a: 1 }), work);
    assert.equal(first.replayed, false);
    assert.equal(second.replayed, true);
    assert.deepEqual(second.body, first.body);
    assert.equal(second.status, 201);
    assert.equal(runs, 1);
  });

  test('the same key with a different request is refused', async () => {
    const store = t.server.services.idempotency;
    await store.run(scope('k2', { a: 1 }), async () => ({ status: 201, body: { ok: true } }));
    await assert.rejects(store.run(scope('k2', { a: 2 }), async () => ({ status: 201, body: { ok: true } })), { code: 'idempotency_key_reused', statusCode: 409 });
  });

  test('a key is scoped to its operation: the same key on two endpoints keeps two responses', async () => {
    const store = t.server.services.idempotency;
    const transfer = await store.run({ ...scope('k-shared', { a: 1 }), operation: 'POST /v1/transfers' }, async () => ({ status: 201, body: { kind: 'transfer' } }));
    const report = await store.run({ ...scope('k-shared', { a: 1 }), operation: 'POST /v1/reports' }, async () => ({ status: 202, body: { kind: 'report' } }));
    assert.deepEqual([transfer.replayed, report.replayed], [false, false], 'the second operation runs its own work');
    const again = await store.run({ ...scope('k-shared', { a: 1 }), operation: 'POST /v1/transfers' }, async () => ({ status: 500, body: { kind: 'not run' } }));
    assert.deepEqual([again.replayed, again.status, again.body], [true, 201, { kind: 'transfer' }]);
    const reportAgain = await store.run({ ...scope('k-shared', { a: 1 }), operation: 'POST /v1/reports' }, async () => ({ status: 500, body: { kind: 'not run' } }));
    assert.deepEqual([reportAgain.replayed, reportAgain.status, reportAgain.body], [true, 202, { kind: 'report' }]);
  });

  test('a key is scoped to its organization: two organizations using the same key each replay their own response', async () => {
    const store = t.server.services.idempotency;
    const otherOrgId = (await t.newOrganization()).organizationId;
    const mine = { ...scope('k-both-orgs', { who: 'mine' }) };
    const theirs = { ...scope('k-both-orgs', { who: 'theirs' }), organizationId: otherOrgId };
    assert.equal((await store.run(mine, async () => ({ status: 201, body: { who: 'mine' } }))).replayed, false);
    assert.equal((await store.run(theirs, async () => ({ status: 201, body: { who: 'theirs' } }))).replayed, false, 'not idempotency_key_reused');
    for (const [s, who] of [[mine, 'mine'], [theirs, 'theirs']] as const) {
      const replay = await store.run(s, async () => ({ status: 500, body: { who: 'not run' } }));
      assert.deepEqual([replay.replayed, replay.body], [true, { who }]);
    }
  });

  test('the Idempotency-Key header: missing is 400 idempotency_key_required; over 255 characters or not printable ASCII is 400 invalid_idempotency_key', () => {
    for (const missing of [undefined, '', []]) assert.throws(() => requireIdempotencyKey(missing), { statusCode: 400, code: 'idempotency_key_required' });
    for (const bad of ['k'.repeat(256), 'has space', 'tab\there', 'caf\u00e9']) assert.throws(() => requireIdempotencyKey(bad), { statusCode: 400, code: 'invalid_idempotency_key' }, bad);
    assert.equal(requireIdempotencyKey('k'.repeat(255)), 'k'.repeat(255));
    assert.equal(requireIdempotencyKey(['first', 'second']), 'first');
    assert.equal(requireIdempotencyKey('order-42:retry~1'), 'order-42:retry~1');
  });

  test('failed work releases the key, so a corrected retry runs', async () => {
    const store = t.server.services.idempotency;
    await assert.rejects(store.run(scope('k3', { a: 1 }), async () => { throw new Error('boom'); }));
    const retry = await store.run(scope('k3', { a: 1 }), async () => ({ status: 201, body: { ok: true } }));
    assert.equal(retry.replayed, false);
  });

  test('concurrent identical requests run the work once and all see the same body', async () => {
    const store = t.server.services.idempotency;
    let runs = 0;
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        store.run(scope('k4', { same: true }), async () => {
          runs++;
          await new Promise((r) => setTimeout(r, 20));
          return { status: 201, body: { id: randomUUID() } };
        }),
      ),
    );
    assert.equal(runs, 1);
    assert.equal(new Set(results.map((r) => (r.body as { id: string }).id)).size, 1);
    assert.equal(results.filter((r) => !r.replayed).length, 1);
  });

  test('a duplicate that waits longer than the lock timeout answers in_progress (server engine)', { skip: !process.env.TEST_DATABASE_URL && 'PGlite serializes sessions, so a duplicate always waits its turn' }, async () => {
    const impatient = new IdempotencyStore(t.server.db.kysely, 24, 200);
    let release!: () => void;
    let started!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inside = new Promise<void>((r) => (started = r));
    const first = impatient.run(scope('k5', { x: 1 }), async () => {
      started();
      await gate;
      return { status: 201, body: { ok: 1 } };
    });
    await inside; // the first request holds the claim
    await assert.rejects(impatient.run(scope('k5', { x: 1 }), async () => ({ status: 201, body: { ok: 2 } })), { code: 'idempotency_request_in_progress', statusCode: 409 });
    release();
    assert.equal((await first).replayed, false);
  });

  test('prune removes only expired records', async () => {
    const store = t.server.services.idempotency;
    await store.run(scope('k6-expired', {}), async () => ({ status: 201, body: { n: 6 } }));
    await store.run(scope('k7-live', {}), async () => ({ status: 201, body: { n: 7 } }));
    await t.server.db.kysely.updateTable('idempotency_records').set({ expires_at: new Date(Date.now() - 1000) }).where('idempotency_key', '=', 'k6-expired').execute();
    const keys = async () => (await t.server.db.kysely.selectFrom('idempotency_records').select('idempotency_key').where('idempotency_key', 'in', ['k6-expired', 'k7-live']).execute()).map((r) => r.idempotency_key).sort();
    assert.deepEqual(await keys(), ['k6-expired', 'k7-live']);
    assert.equal(await store.prune(), 1);
    assert.deepEqual(await keys(), ['k7-live']);
    // Once expired, a key can be used for a new request.
    const reused = await store.run(scope('k6-expired', { different: true }), async () => ({ status: 201, body: { n: 8 } }));
    assert.equal(reused.replayed, false);
    // The live record is kept for CORRIDOR_IDEMPOTENCY_TTL_HOURS (24 by default) and goes after.
    assert.equal(await store.prune(new Date(Date.now() + 23 * 3600 * 1000)), 0);
    assert.ok((await store.prune(new Date(Date.now() + 25 * 3600 * 1000))) >= 2);
    assert.deepEqual(await keys(), []);
  });
});
