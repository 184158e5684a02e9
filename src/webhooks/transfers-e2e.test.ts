import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { assertLegEvent, createTransfer, driveToRest, fund, newCustomer, newTransfer, quoteOption } from '../transfers/test-support.ts';
import { startReceiver, waitFor } from './test-receiver.ts';
import type { Receiver } from './test-receiver.ts';

describe('webhooks for real transfers', () => {
  let t: TestServer;
  let r: Receiver;
  before(async () => {
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '1000' });
    r = await startReceiver();
  });
  after(async () => {
    await r.close();
    await t.close();
  });

  test('a transfer run to COMPLETED is delivered as one signed event per change, the same ones GET /v1/events lists', async () => {
    const c = await newCustomer(t, 'Webhooks');
    const created = await t.request('POST', '/v1/webhook-endpoints', {
      apiKey: c.org.apiKey,
      body: { url: r.url, eventTypes: ['transfer.status_changed', 'transfer.leg_status_changed'] },
    });
    assert.equal(created.status, 201, created.text);
    const secret = created.body.secret as string;

    const transfer = await newTransfer(t, c, '1000.00');
    await driveToRest(t, c, transfer.id);
    await fund(t, c, transfer.id);
    const done = await driveToRest(t, c, transfer.id);
    assert.equal(done.status, 'COMPLETED');

    await waitFor('one delivery per transfer version', () => new Set(r.received.map((x) => x.headers['webhook-id'])).size >= done.version);
    const byId = new Map<string, any>();
    for (const req of r.received) {
      const event = new Webhook(secret).verify(req.body, req.headers) as any;
      assert.equal(req.headers['webhook-id'], event.id);
      byId.set(event.id, event);
    }
    const delivered = [...byId.values()].sort((a, b) => a.data.version - b.data.version);
    assert.deepEqual(delivered.map((e) => e.data.version), Array.from({ length: done.version }, (_, i) => i + 1));
    for (const [i, event] of delivered.entries()) {
      const item = done.timeline[i];
      assert.equal(event.data.transferId, done.id);
      assert.equal(event.type, item.type === 'STATUS' ? 'transfer.status_changed' : 'transfer.leg_status_changed');
      assert.equal(event.data.status, item.status);
      assert.equal(event.data.blockingParty, item.blockingParty);
      if (event.type === 'transfer.leg_status_changed') {
        assertLegEvent(done, item, event.data.leg);
      } else {
        assert.equal(event.data.previousStatus, item.previousStatus);
        assert.equal(event.data.leg, undefined);
      }
      for (const key of Object.keys(event.data)) assert.ok(['transferId', 'status', 'previousStatus', 'blockingParty', 'version', 'leg'].includes(key), key);
    }
    assert.equal(delivered.at(-1).data.status, 'COMPLETED');

    // The events API answers the same events, in the order they happened.
    // It shows an event once every older transaction on the server has ended (other test files
    // share the server), so give it until then.
    let listed = await t.request('GET', '/v1/events?limit=100', { apiKey: c.org.apiKey });
    for (let i = 0; i < 600 && listed.status === 200 && listed.body.data.length < delivered.length; i++) {
      await new Promise((r) => setTimeout(r, 50));
      listed = await t.request('GET', '/v1/events?limit=100', { apiKey: c.org.apiKey });
    }
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data, delivered);
  });

  test('an endpoint made between the quote and its transfer gets the creation event (the creation checks for subscribers as it writes)', async () => {
    const c = await newCustomer(t, 'Late subscriber');
    // The quote makes this process remember the option and the destination; a transfer on it
    // reads nothing first, and had no subscriber the last time this organization created one.
    const { optionId } = await quoteOption(t, c, '100.00');
    const endpoint = await t.request('POST', '/v1/webhook-endpoints', { apiKey: c.org.apiKey, body: { url: r.url, eventTypes: ['transfer.status_changed'] } });
    assert.equal(endpoint.status, 201, endpoint.text);
    const created = await createTransfer(t, c, optionId);
    assert.equal(created.status, 201, created.text);
    await waitFor('the creation event', () =>
      r.received.some((req) => {
        const event = JSON.parse(req.body);
        return event.data?.transferId === created.body.id && event.data.status === 'PENDING_SETUP';
      }),
    );
  });
});
