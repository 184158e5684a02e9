import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import type { EventType } from '../events/service.ts';
import { startReceiver, waitFor } from './test-receiver.ts';
import type { Receiver, Responder } from './test-receiver.ts';

const TIMEOUT_MS = 1500;
const MAX_FAILURES = 3;

describe('webhooks', () => {
  let t: TestServer;
  const receivers: Receiver[] = [];

  before(async () => {
    t = await startTestServer({
      CORRIDOR_WEBHOOK_RETRY_SCALE: '0.001',
      CORRIDOR_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      CORRIDOR_WEBHOOK_MAX_CONSECUTIVE_FAILURES: String(MAX_FAILURES),
    });
  });
  after(async () => {
    for (const r of receivers) await r.close();
    await t.close();
  });

  async function receiver(respond?: Responder) {
    const r = await startReceiver(respond);
    receivers.push(r);
    return r;
  }

  async function endpoint(org: TestOrganization, url: string, eventTypes: EventType[] = ['transfer.status_changed', 'transfer.leg_status_changed']) {
    const res = await t.request('POST', '/v1/webhook-endpoints', { apiKey: org.apiKey, body: { url, eventTypes } });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; secret: string; url: string; status: string };
  }

  let version = 0;
  async function record(org: TestOrganization, type: EventType = 'transfer.status_changed', data: Record<string, unknown> = {}) {
    return t.server.db.kysely.transaction().execute((trx) =>
      t.server.services.events.record(trx, {
        organizationId: org.organizationId,
        type,
        data: { transferId: randomUUID(), status: 'IN_PROGRESS', previousStatus: 'AWAITING_FUNDS', blockingParty: 'PROVIDER', version: ++version, ...data },
      }),
    );
  }

  async function deliveries(org: TestOrganization, endpointId: string) {
    const res = await t.request('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, { apiKey: org.apiKey });
    assert.equal(res.status, 200, res.text);
    return res.body.data as Array<any>;
  }

  /** The endpoint's deliveries, newest first, once the newest has succeeded. */
  async function newestSucceeded(org: TestOrganization, endpointId: string, what: string) {
    return waitFor(what, async () => {
      const list = await deliveries(org, endpointId);
      return list[0]?.status === 'SUCCEEDED' && list;
    });
  }

  async function endpointState(org: TestOrganization, endpointId: string) {
    const res = await t.request('GET', `/v1/webhook-endpoints/${endpointId}`, { apiKey: org.apiKey });
    assert.equal(res.status, 200, res.text);
    return res.body;
  }

  test('deliveries carry Standard Webhooks signatures that the standardwebhooks library verifies', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(org, r.url);
    assert.match(ep.secret, /^whsec_[A-Za-z0-9+/]+={0,2}$/);
    assert.ok(Buffer.from(ep.secret.slice('whsec_'.length), 'base64').length >= 24);

    const event = await record(org, 'transfer.leg_status_changed', {
      leg: { position: 1, status: 'COMPLETED', progressStage: 'SETTLED' },
      providerPayload: { raw: 'secret stuff' },
      credentials: { apiKey: 'pk_live_123' },
    });
    const got = await waitFor('the delivery', () => r.received[0]);

    assert.equal(got.headers['webhook-id'], event.id);
    assert.equal(got.headers['content-type'], 'application/json');
    assert.match(got.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]+={0,2}$/);
    const verified = new Webhook(ep.secret).verify(got.body, got.headers) as any;
    assert.deepEqual(verified, {
      id: event.id,
      type: 'transfer.leg_status_changed',
      createdAt: event.createdAt.toISOString(),
      data: {
        transferId: event.data.transferId,
        status: 'IN_PROGRESS',
        previousStatus: 'AWAITING_FUNDS',
        blockingParty: 'PROVIDER',
        version: event.data.version,
        leg: { position: 1, status: 'COMPLETED', progressStage: 'SETTLED' },
      },
    });
    assert.doesNotMatch(got.body, /secret stuff|pk_live_123/);
    // A signature made with another secret does not verify: the check above is not vacuous.
    assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(got.body, got.headers));

    const [delivery] = await newestSucceeded(org, ep.id, 'the delivery to be recorded');
    assert.equal(delivery.eventId, event.id);
    assert.equal(delivery.attemptCount, 1);
    assert.equal(delivery.attempts[0].statusCode, 200);
    assert.equal(delivery.attempts[0].responseBody, 'ok');
    assert.equal(delivery.attempts[0].trigger, 'AUTOMATIC');
    assert.equal(typeof delivery.attempts[0].latencyMs, 'number');
  });

  test('an endpoint receives only the event types it subscribed to', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const legsOnly = await endpoint(org, r.url, ['transfer.leg_status_changed']);
    const statusOnly = await endpoint(org, r.url, ['transfer.status_changed']);
    const statusEvent = await record(org, 'transfer.status_changed');
    const legEvent = await record(org, 'transfer.leg_status_changed', { leg: { position: 1, status: 'PENDING', progressStage: null } });
    // Deliveries are created in the recording transaction, so the lists are complete already.
    assert.deepEqual((await deliveries(org, legsOnly.id)).map((d) => d.eventId), [legEvent.id]);
    assert.deepEqual((await deliveries(org, statusOnly.id)).map((d) => d.eventId), [statusEvent.id]);
    await waitFor('both deliveries', () => r.received.length === 2);
    assert.deepEqual(r.received.map((x) => x.headers['webhook-id']).sort(), [statusEvent.id, legEvent.id].sort());
  });

  test('secret rotation: during the overlap each delivery carries both signatures, and each secret verifies it', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(org, r.url);
    const rotated = await t.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { apiKey: org.apiKey });
    assert.equal(rotated.status, 200, rotated.text);
    const newSecret = rotated.body.secret as string;
    assert.notEqual(newSecret, ep.secret);
    assert.ok(Date.parse(rotated.body.previousSecretExpiresAt) > Date.now() + 23 * 3600_000);

    const event = await record(org);
    const got = await waitFor('the delivery', () => r.received[0]);
    const signatures = got.headers['webhook-signature']!.split(' ');
    assert.equal(signatures.length, 2);
    for (const secret of [newSecret, ep.secret]) assert.equal((new Webhook(secret).verify(got.body, got.headers) as any).id, event.id);
    // Each signature on its own verifies with exactly one of the secrets.
    const alone = (sig: string) => ({ ...got.headers, 'webhook-signature': sig });
    assert.equal((new Webhook(newSecret).verify(got.body, alone(signatures[0]!)) as any).id, event.id);
    assert.equal((new Webhook(ep.secret).verify(got.body, alone(signatures[1]!)) as any).id, event.id);
    assert.throws(() => new Webhook(ep.secret).verify(got.body, alone(signatures[0]!)));

    // A second rotation replaces the oldest secret: it no longer signs anything.
    const again = await t.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { apiKey: org.apiKey });
    await record(org);
    const second = await waitFor('the second delivery', () => r.received[1]);
    assert.equal(second.headers['webhook-signature']!.split(' ').length, 2);
    new Webhook(again.body.secret).verify(second.body, second.headers);
    new Webhook(newSecret).verify(second.body, second.headers);
    assert.throws(() => new Webhook(ep.secret).verify(second.body, second.headers));
    // The secret is never shown again.
    const shown = await t.request('GET', `/v1/webhook-endpoints/${ep.id}`, { apiKey: org.apiKey });
    assert.equal(shown.body.secret, undefined);
  });

  test('failed attempts are retried under the same webhook-id until one succeeds; each attempt is readable with status, latency and a truncated body', async () => {
    const org = await t.newOrganization();
    const longBody = 'x'.repeat(1000) + 'TAIL-THAT-MUST-BE-CUT' + 'y'.repeat(3000);
    const r = await receiver((req) => (req.n <= 2 ? { status: 500, body: longBody } : { status: 204 }));
    const ep = await endpoint(org, r.url);
    const event = await record(org);
    await waitFor('three attempts', () => r.received.length >= 3);
    assert.deepEqual(r.received.map((x) => x.headers['webhook-id']), [event.id, event.id, event.id]);
    // Every attempt is signed afresh and verifies.
    for (const req of r.received) new Webhook(ep.secret).verify(req.body, req.headers);

    const [delivery] = await newestSucceeded(org, ep.id, 'the success to be recorded');
    assert.equal(delivery.attemptCount, 3);
    assert.deepEqual(delivery.attempts.map((a: any) => [a.attemptNumber, a.statusCode, a.succeeded, a.trigger]), [
      [1, 500, false, 'AUTOMATIC'],
      [2, 500, false, 'AUTOMATIC'],
      [3, 204, true, 'AUTOMATIC'],
    ]);
    const first = delivery.attempts[0];
    assert.equal(first.responseBody, longBody.slice(0, 1024));
    assert.equal(first.error, 'the endpoint answered 500');
    assert.ok(Number.isInteger(first.latencyMs) && first.latencyMs >= 0);
    assert.ok(Date.parse(first.finishedAt) >= Date.parse(first.startedAt));
    assert.equal(delivery.nextAttemptAt, null);

    // Two failures, then a success: the streak is reset, so the endpoint stays enabled through
    // another two failures even though MAX_FAILURES is 3.
    r.respond = (req) => (req.n <= 5 ? { status: 503 } : { status: 200 });
    await record(org);
    await waitFor('three more attempts', () => r.received.length >= 6);
    await waitFor('the second success', async () => (await deliveries(org, ep.id))[0]?.status === 'SUCCEEDED');
    assert.equal((await endpointState(org, ep.id)).status, 'ENABLED');
  });

  test('Retry-After is honoured, up to 10 s on the first retry', async () => {
    const org = await t.newOrganization();
    const r = await receiver((req) => (req.n === 1 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 }));
    const ep = await endpoint(org, r.url);
    await record(org);
    const [delivery] = await newestSucceeded(org, ep.id, 'the retry to succeed');
    const [a1, a2] = delivery.attempts;
    // The backoff alone would have retried after ~5 ms (scale 0.001); the receiver asked for 2 s.
    assert.ok(Date.parse(a2.startedAt) - Date.parse(a1.finishedAt) >= 1990, `retried after ${Date.parse(a2.startedAt) - Date.parse(a1.finishedAt)} ms`);
    assert.ok(r.received[1]!.receivedAt - r.received[0]!.receivedAt >= 1990);

    const far = await receiver(() => ({ status: 429, headers: { 'retry-after': '99999999' } }));
    const ep2 = await endpoint(org, far.url);
    await record(org);
    const [waiting] = await waitFor('the first attempt to be recorded', async () => {
      const list = await deliveries(org, ep2.id);
      return list[0]?.attemptCount === 1 && list;
    });
    assert.equal(waiting.status, 'PENDING');
    // The receiver asked for three years; the first retry still comes within 10 s (DECISIONS.md §10).
    assert.equal(Date.parse(waiting.nextAttemptAt) - Date.parse(waiting.lastAttemptAt), 10_000);
  });

  test('a 410 answer disables the endpoint at once; the reason is kept and nothing more is sent', async () => {
    const org = await t.newOrganization();
    const r = await receiver(() => ({ status: 410, body: 'gone' }));
    const ep = await endpoint(org, r.url);
    await record(org);
    const disabled = await waitFor('the endpoint to be disabled', async () => {
      const state = await endpointState(org, ep.id);
      return state.status === 'DISABLED' && state;
    });
    assert.equal(disabled.disabledReason, 'endpoint_gone');
    assert.ok(disabled.disabledAt);
    const [delivery] = await deliveries(org, ep.id);
    assert.equal(delivery.status, 'FAILED');
    assert.equal(delivery.failureReason, 'endpoint_disabled');
    assert.equal(delivery.attemptCount, 1);
    const changes = await t.server.db.kysely.selectFrom('webhook_endpoint_status_changes').selectAll().where('endpoint_id', '=', ep.id).execute();
    assert.deepEqual(changes.map((c) => [c.status, c.reason]), [['DISABLED', 'endpoint_gone']]);

    await record(org);
    assert.equal((await deliveries(org, ep.id)).length, 1, 'a disabled endpoint gets no new deliveries');

    // Re-enabled by hand, a replay of the failed delivery goes through and marks it SUCCEEDED.
    r.respond = () => ({ status: 200, body: 'back' });
    const enabled = await t.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, { apiKey: org.apiKey, body: { status: 'ENABLED' } });
    assert.equal(enabled.status, 200, enabled.text);
    assert.equal(enabled.body.disabledReason, null);
    const replay = await t.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${delivery.id}/replay`, { apiKey: org.apiKey });
    assert.equal(replay.status, 202, replay.text);
    const [replayed] = await newestSucceeded(org, ep.id, 'the replay to succeed');
    assert.deepEqual(replayed.attempts.map((a: any) => [a.attemptNumber, a.statusCode, a.trigger]), [
      [1, 410, 'AUTOMATIC'],
      [2, 200, 'MANUAL'],
    ]);
    assert.equal(r.received[1]!.headers['webhook-id'], delivery.eventId);
  });

  test(`${MAX_FAILURES} failed attempts in a row disable the endpoint with a recorded reason`, async () => {
    const org = await t.newOrganization();
    const r = await receiver(() => ({ status: 500, body: 'boom' }));
    const ep = await endpoint(org, r.url);
    await record(org);
    const disabled = await waitFor('the endpoint to be disabled', async () => {
      const state = await endpointState(org, ep.id);
      return state.status === 'DISABLED' && state;
    }, 60_000);
    assert.equal(disabled.disabledReason, 'too_many_failures');
    const [delivery] = await waitFor('the delivery to end', async () => {
      const list = await deliveries(org, ep.id);
      return list[0]?.status === 'FAILED' && list;
    });
    assert.equal(delivery.attemptCount, MAX_FAILURES);
    assert.equal(delivery.failureReason, 'endpoint_disabled');
    assert.equal(r.received.length, MAX_FAILURES);
    const changes = await t.server.db.kysely.selectFrom('webhook_endpoint_status_changes').selectAll().where('endpoint_id', '=', ep.id).execute();
    assert.equal(changes.length, 1);
    assert.equal(changes[0]!.reason, 'too_many_failures');
    assert.match(changes[0]!.detail, /3 delivery attempts in a row failed; the last: the endpoint answered 500/);
    // Replaying to a disabled endpoint is refused.
    const replay = await t.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${delivery.id}/replay`, { apiKey: org.apiKey });
    assert.equal(replay.status, 409);
    assert.equal(replay.body.code, 'webhook_endpoint_disabled');

    // Enabled again by hand, the endpoint starts a fresh streak: one more failure does not disable it.
    const missed = await record(org);
    const enabled = await t.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, { apiKey: org.apiKey, body: { status: 'ENABLED' } });
    assert.equal(enabled.status, 200, enabled.text);
    // The last step of a retry chain, so that this one failure queues nothing after it.
    const lastStep = await parkedDelivery(org, ep.id, missed, 13);
    await t.server.services.webhooks.deliver({ deliveryId: lastStep, step: 14 });
    assert.equal(r.received.length, MAX_FAILURES + 1);
    assert.equal((await endpointState(org, ep.id)).status, 'ENABLED');
  });

  test('manual replay delivers the same event again under the same webhook-id', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(org, r.url);
    const event = await record(org);
    const [delivery] = await newestSucceeded(org, ep.id, 'the delivery');
    const replay = await t.request('POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${delivery.id}/replay`, { apiKey: org.apiKey });
    assert.equal(replay.status, 202, replay.text);
    assert.equal(replay.body.id, delivery.id);
    await waitFor('the replayed request', () => r.received.length === 2);
    assert.equal(r.received[1]!.headers['webhook-id'], event.id);
    assert.equal(r.received[1]!.body, r.received[0]!.body);
    new Webhook(ep.secret).verify(r.received[1]!.body, r.received[1]!.headers);
    const [after] = await waitFor('the manual attempt to be recorded', async () => {
      const list = await deliveries(org, ep.id);
      return list[0]?.attemptCount === 2 && list;
    });
    assert.deepEqual(after.attempts.map((a: any) => a.trigger), ['AUTOMATIC', 'MANUAL']);
    assert.equal(after.status, 'SUCCEEDED');
  });

  /**
   * A delivery of an event recorded before the endpoint existed, written straight to the store at
   * the given step of its retry chain, with no job queued: the test runs its jobs by hand.
   */
  async function parkedDelivery(org: TestOrganization, endpointId: string, event: { id: string; type: string }, retryStep = 0) {
    const id = randomUUID();
    await t.server.db.kysely
      .insertInto('webhook_deliveries')
      .values({ id, organization_id: org.organizationId, endpoint_id: endpointId, event_id: event.id, event_type: event.type, next_attempt_at: new Date(), retry_step: retryStep })
      .execute();
    return id;
  }

  test('the chain ends after 14 attempts: the 13th failure schedules one more, the 14th marks the delivery FAILED retries_exhausted', async () => {
    const org = await t.newOrganization();
    const r = await receiver(() => ({ status: 500 }));
    const event = await record(org);
    const ep = await endpoint(org, r.url);
    const id = await parkedDelivery(org, ep.id, event, 12);

    await t.server.services.webhooks.deliver({ deliveryId: id, step: 13 });
    const [afterThirteen] = await deliveries(org, ep.id);
    assert.equal(afterThirteen.status, 'PENDING');
    assert.equal(afterThirteen.failureReason, null);
    assert.ok(afterThirteen.nextAttemptAt, 'a 14th attempt is scheduled');

    await t.server.services.webhooks.deliver({ deliveryId: id, step: 14 });
    const [afterFourteen] = await deliveries(org, ep.id);
    assert.equal(afterFourteen.status, 'FAILED');
    assert.equal(afterFourteen.failureReason, 'retries_exhausted');
    assert.equal(afterFourteen.nextAttemptAt, null);
    assert.equal(afterFourteen.attemptCount, 2);
    assert.equal(r.received.length, 2);
    // Two failures in a row stay under the streak that disables the endpoint.
    assert.equal((await endpointState(org, ep.id)).status, 'ENABLED');
  });

  test('a pending delivery whose endpoint was disabled before its attempt is not sent: it ends FAILED endpoint_disabled', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const event = await record(org);
    const ep = await endpoint(org, r.url);
    const id = await parkedDelivery(org, ep.id, event);
    const disabled = await t.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, { apiKey: org.apiKey, body: { status: 'DISABLED' } });
    assert.equal(disabled.status, 200, disabled.text);

    // The queued retry comes due, and so does a replay queued before the endpoint was disabled.
    await t.server.services.webhooks.deliver({ deliveryId: id, step: 1 });
    await t.server.services.webhooks.deliver({ deliveryId: id, manual: true });
    assert.equal(r.received.length, 0);
    const [delivery] = await deliveries(org, ep.id);
    assert.equal(delivery.status, 'FAILED');
    assert.equal(delivery.failureReason, 'endpoint_disabled');
    assert.equal(delivery.attemptCount, 0);
  });

  test('a delivery job the queue runs again after its step was recorded sends nothing more', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(org, r.url);
    await record(org);
    const [delivery] = await newestSucceeded(org, ep.id, 'the delivery');
    // The job of step 1 run a second time (its lease lapsed just as it finished, say).
    await t.server.services.webhooks.deliver({ deliveryId: delivery.id, step: 1 });
    assert.equal(r.received.length, 1);
    assert.equal((await deliveries(org, ep.id))[0].attemptCount, 1);
  });

  test('deliveries are listed newest first and page on with the cursor', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(org, r.url);
    const events = [await record(org), await record(org), await record(org)];
    await waitFor('three deliveries', async () => (await deliveries(org, ep.id)).filter((d) => d.status === 'SUCCEEDED').length === 3);
    // Distinct creation times, oldest first in recording order, whatever the clock's resolution.
    for (const [i, event] of events.entries()) {
      await t.server.db.kysely.updateTable('webhook_deliveries').set({ created_at: new Date(Date.UTC(2026, 0, 1, 0, i)) }).where('event_id', '=', event.id).execute();
    }
    const first = await t.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?limit=2`, { apiKey: org.apiKey });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.data.map((d: any) => d.eventId), [events[2]!.id, events[1]!.id]);
    assert.equal(first.body.meta.total, 3);
    assert.ok(first.body.meta.nextCursor);
    const second = await t.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?limit=2&cursor=${first.body.meta.nextCursor}`, { apiKey: org.apiKey });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body.data.map((d: any) => d.eventId), [events[0]!.id]);
    assert.equal(second.body.meta.nextCursor, null);
  });

  test('redirects are not followed: a 302 is a failed attempt and its target is never called', async () => {
    const org = await t.newOrganization();
    const target = await receiver();
    const r = await receiver(() => ({ status: 302, headers: { location: target.url } }));
    const ep = await endpoint(org, r.url);
    await record(org);
    const [delivery] = await waitFor('the first attempt', async () => {
      const list = await deliveries(org, ep.id);
      return list[0]?.attemptCount >= 1 && list;
    });
    const attempt = delivery.attempts[0];
    assert.equal(attempt.statusCode, 302);
    assert.equal(attempt.succeeded, false);
    assert.match(attempt.error, /^redirect not followed \(302 to http:\/\/127\.0\.0\.1:\d+\/hooks\)$/);
    assert.equal(target.received.length, 0);
  });

  test('an endpoint that never answers fails after the configured timeout', async () => {
    const org = await t.newOrganization();
    const r = await receiver(() => ({ hang: true }));
    const ep = await endpoint(org, r.url);
    await record(org);
    const [delivery] = await waitFor('the first attempt to time out', async () => {
      const list = await deliveries(org, ep.id);
      return list[0]?.attemptCount >= 1 && list;
    });
    const attempt = delivery.attempts[0];
    assert.equal(attempt.statusCode, null);
    assert.equal(attempt.error, `no response within ${TIMEOUT_MS} ms`);
    assert.ok(attempt.latencyMs >= TIMEOUT_MS - 10, `gave up after ${attempt.latencyMs} ms`);
    assert.ok(attempt.latencyMs < TIMEOUT_MS * 10, `gave up after ${attempt.latencyMs} ms`);
  });

  test('endpoint management: the secret is shown once; list, get, patch and delete', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const created = await t.request('POST', '/v1/webhook-endpoints', {
      apiKey: org.apiKey,
      body: { url: r.url, eventTypes: ['transfer.status_changed'], description: 'ledger sync' },
    });
    assert.equal(created.status, 201);
    assert.deepEqual(Object.keys(created.body).sort(), [
      'createdAt', 'description', 'disabledAt', 'disabledReason', 'eventTypes', 'id', 'previousSecretExpiresAt', 'secret', 'status', 'updatedAt', 'url',
    ]);
    assert.equal(created.body.status, 'ENABLED');
    assert.match(created.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const id = created.body.id;

    const list = await t.request('GET', '/v1/webhook-endpoints', { apiKey: org.apiKey });
    assert.equal(list.status, 200);
    assert.equal(list.body.meta.total, 1);
    assert.equal(list.body.data[0].id, id);
    assert.equal(list.body.data[0].secret, undefined);
    assert.doesNotMatch(list.text, /whsec_/);

    const patched = await t.request('PATCH', `/v1/webhook-endpoints/${id}`, {
      apiKey: org.apiKey,
      body: { eventTypes: ['transfer.leg_status_changed'], url: `${r.url}/v2`, status: 'DISABLED' },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body.eventTypes, ['transfer.leg_status_changed']);
    assert.equal(patched.body.url, `${r.url}/v2`);
    assert.equal(patched.body.status, 'DISABLED');
    assert.equal(patched.body.disabledReason, 'disabled_by_user');
    await record(org, 'transfer.leg_status_changed');
    assert.equal((await deliveries(org, id)).length, 0, 'a disabled endpoint gets nothing');

    await t.request('PATCH', `/v1/webhook-endpoints/${id}`, { apiKey: org.apiKey, body: { status: 'ENABLED' } });
    await record(org, 'transfer.leg_status_changed');
    await waitFor('the delivery to the new url', () => r.received[0]);
    assert.equal(r.received[0]!.path, '/hooks/v2');

    const del = await t.request('DELETE', `/v1/webhook-endpoints/${id}`, { apiKey: org.apiKey });
    assert.equal(del.status, 204);
    assert.equal((await t.request('GET', `/v1/webhook-endpoints/${id}`, { apiKey: org.apiKey })).status, 404);
    await record(org, 'transfer.leg_status_changed');
    const remaining = await t.server.db.kysely.selectFrom('webhook_deliveries').select('id').where('organization_id', '=', org.organizationId).execute();
    assert.equal(remaining.length, 0);
  });

  // Regression: a delivery job that finished while its endpoint was being deleted deadlocked with
  // the DELETE (job: delivery, then endpoint; DELETE: endpoint, then its deliveries through the
  // cascade), and the DELETE answered 500.
  test('deleting an endpoint while a delivery job is recording its attempt answers 204, and the job commits', { skip: !process.env.TEST_DATABASE_URL && 'needs concurrent transactions (PostgreSQL)' }, async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(org, r.url);
    await record(org);
    const [delivery] = await newestSucceeded(org, ep.id, 'the delivery');
    const db = t.server.db.kysely;
    const waitingOnALock = async () => {
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
      return Number(rows[0]!.n) > 0;
    };

    let deleting: Promise<number> | undefined;
    await db.transaction().execute(async (trx) => {
      // What a delivery job's bookkeeping does, in its order: its delivery first, then the endpoint.
      await trx.updateTable('webhook_deliveries' as any).set({ attempt_count: sql`attempt_count + 1` }).where('id', '=', delivery.id).execute();
      deleting = t.request('DELETE', `/v1/webhook-endpoints/${ep.id}`, { apiKey: org.apiKey }).then((res) => res.status);
      await waitFor('the DELETE to wait for the job', waitingOnALock);
      await trx.updateTable('webhook_endpoints' as any).set({ consecutive_failures: 1 }).where('id', '=', ep.id).execute();
      // Let the DELETE run into its deadlock check (deadlock_timeout is 1 s) if it is going to.
      await new Promise((done) => setTimeout(done, 1200));
    });
    assert.equal(await deleting, 204);
    assert.equal((await t.request('GET', `/v1/webhook-endpoints/${ep.id}`, { apiKey: org.apiKey })).status, 404);
  });

  test('finished deliveries are forgotten after 30 days; pending ones are kept', async () => {
    const org = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(org, r.url);
    const [first, second] = [await record(org), await record(org)];
    const list = await waitFor('the deliveries', async () => {
      const list = await deliveries(org, ep.id);
      return list.length === 2 && list.every((d) => d.status === 'SUCCEEDED') && list;
    });
    const done = list.find((d) => d.eventId === first.id);
    const recent = list.find((d) => d.eventId === second.id);
    const pending = await endpoint(org, 'http://127.0.0.1:9/never-called');
    await t.request('PATCH', `/v1/webhook-endpoints/${pending.id}`, { apiKey: org.apiKey, body: { status: 'DISABLED' } });
    const old = new Date(Date.now() - 31 * 86_400_000);
    await t.server.db.kysely
      .insertInto('webhook_deliveries')
      .values({ id: randomUUID(), organization_id: org.organizationId, endpoint_id: pending.id, event_id: done.eventId, event_type: 'transfer.status_changed', next_attempt_at: old, created_at: old, updated_at: old })
      .execute();
    await t.server.db.kysely.updateTable('webhook_deliveries').set({ updated_at: old }).where('id', '=', done.id).execute();
    // Finished 29 days ago: still inside the 30 days.
    await t.server.db.kysely.updateTable('webhook_deliveries').set({ updated_at: new Date(Date.now() - 29 * 86_400_000) }).where('id', '=', recent.id).execute();
    assert.ok((await t.server.services.webhooks.prune()) >= 1);
    assert.deepEqual((await deliveries(org, ep.id)).map((d) => d.id), [recent.id]);
    assert.equal((await deliveries(org, pending.id)).length, 1);
  });

  test('bad registrations answer 422 validation_error with the field', async () => {
    const org = await t.newOrganization();
    const cases: Array<[unknown, string]> = [
      [{ url: 'not a url', eventTypes: ['transfer.status_changed'] }, 'url'],
      [{ url: 'ftp://127.0.0.1/x', eventTypes: ['transfer.status_changed'] }, 'url'],
      [{ url: 'http://user:pw@127.0.0.1/x', eventTypes: ['transfer.status_changed'] }, 'url'],
      [{ url: 'http://127.0.0.1/x', eventTypes: [] }, 'eventTypes'],
      [{ url: 'http://127.0.0.1/x', eventTypes: ['transfer.created'] }, 'eventTypes.0'],
      [{ url: 'http://127.0.0.1/x' }, 'eventTypes'],
    ];
    for (const [body, path] of cases) {
      const res = await t.request('POST', '/v1/webhook-endpoints', { apiKey: org.apiKey, body });
      assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.code, 'validation_error');
      assert.ok(res.body.details.some((d: any) => d.path === path), `${JSON.stringify(body)}: ${res.text}`);
    }
    // The sandbox accepts loopback and plain http for local development.
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost:9/x', 'https://10.0.0.1/x']) {
      const res = await t.request('POST', '/v1/webhook-endpoints', { apiKey: org.apiKey, body: { url, eventTypes: ['transfer.status_changed'] } });
      assert.equal(res.status, 201, `${url}: ${res.text}`);
    }
  });

  test('permissions: reading needs webhooks:read, changing needs webhooks:write', async () => {
    const org = await t.newOrganization();
    const ep = await endpoint(org, 'http://127.0.0.1:9/x');
    const key = await t.request('POST', '/v1/api-keys', { token: org.token, body: { name: 'read only', scopes: ['webhooks:read'] } });
    assert.equal(key.status, 201, key.text);
    const readOnly = key.body.secret;
    assert.equal((await t.request('GET', '/v1/webhook-endpoints', { apiKey: readOnly })).status, 200);
    assert.equal((await t.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, { apiKey: readOnly })).status, 200);
    assert.equal((await t.request('GET', '/v1/events', { apiKey: readOnly })).status, 200);
    for (const [method, url, body] of [
      ['POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/x', eventTypes: ['transfer.status_changed'] }],
      ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { status: 'DISABLED' }],
      ['DELETE', `/v1/webhook-endpoints/${ep.id}`, undefined],
      ['POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, undefined],
    ] as const) {
      const res = await t.request(method, url, { apiKey: readOnly, ...(body ? { body } : {}) });
      assert.equal(res.status, 403, `${method} ${url}`);
    }
  });

  test("another organization's endpoints, deliveries and events answer 404 on every route", async () => {
    const owner = await t.newOrganization();
    const other = await t.newOrganization();
    const r = await receiver();
    const ep = await endpoint(owner, r.url);
    const event = await record(owner);
    const [delivery] = await newestSucceeded(owner, ep.id, 'the delivery');
    const routes: Array<[string, string, unknown?]> = [
      ['GET', `/v1/webhook-endpoints/${ep.id}`],
      ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { status: 'DISABLED' }],
      ['POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`],
      ['GET', `/v1/webhook-endpoints/${ep.id}/deliveries`],
      ['POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${delivery.id}/replay`],
      ['DELETE', `/v1/webhook-endpoints/${ep.id}`],
      ['GET', `/v1/events/${event.id}`],
    ];
    for (const [method, url, body] of routes) {
      const res = await t.request(method, url, { apiKey: other.apiKey, ...(body ? { body } : {}) });
      assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
      assert.equal(res.body.code, 'not_found');
    }
    // A delivery id of one endpoint is not reachable through another endpoint of the same caller either.
    const ep2 = await endpoint(other, r.url);
    const cross = await t.request('POST', `/v1/webhook-endpoints/${ep2.id}/deliveries/${delivery.id}/replay`, { apiKey: other.apiKey });
    assert.equal(cross.status, 404);
    const list = await t.request('GET', '/v1/webhook-endpoints', { apiKey: other.apiKey });
    assert.deepEqual(list.body.data.map((e: any) => e.id), [ep2.id]);
    // Nothing changed for the owner.
    const state = await endpointState(owner, ep.id);
    assert.equal(state.status, 'ENABLED');
    assert.equal((await deliveries(owner, ep.id))[0].attemptCount, 1);
  });
});
