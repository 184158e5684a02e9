import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { startReceiver } from './test-receiver.ts';
import type { Receiver } from './test-receiver.ts';

// Production refuses webhook URLs that could reach the service's own network. Only names that
// resolve locally (localhost) and literal addresses are used, so nothing is ever sent anywhere.
describe('webhook endpoints in production', () => {
  let t: TestServer;
  let r: Receiver;
  before(async () => {
    t = await startTestServer({ CORRIDOR_ENV: 'production', CORRIDOR_SIGNUP: 'open' });
    r = await startReceiver();
  });
  after(async () => {
    await r.close();
    await t.close();
  });

  test('registration refuses plain http and loopback, private, link-local, CGNAT and metadata addresses with 422 unsafe_webhook_url', async () => {
    const org = await t.newOrganization();
    const refused: Array<[string, RegExp]> = [
      [`http://hooks.example.com/x`, /only to https/],
      [`https://127.0.0.1:${r.port}/hooks`, /127\.0\.0\.1 is a loopback address/],
      [`https://localhost:${r.port}/hooks`, /localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
      ['https://[::1]/hooks', /loopback/],
      ['https://10.0.0.1/hooks', /10\.0\.0\.1 is a private address/],
      ['https://172.20.1.1/hooks', /private/],
      ['https://192.168.0.10/hooks', /private/],
      ['https://[fd00::10]/hooks', /private/],
      ['https://169.254.1.1/hooks', /link-local/],
      ['https://[fe80::1]/hooks', /link-local/],
      ['https://100.64.1.1/hooks', /carrier-grade NAT/],
      ['https://169.254.169.254/latest/meta-data/', /metadata/],
      ['https://[fd00:ec2::254]/', /metadata/],
    ];
    for (const [url, message] of refused) {
      const res = await t.request('POST', '/v1/webhook-endpoints', { apiKey: org.apiKey, body: { url, eventTypes: ['transfer.status_changed'] } });
      assert.equal(res.status, 422, `${url}: ${res.text}`);
      assert.equal(res.body.code, 'unsafe_webhook_url', url);
      assert.match(res.body.message, message, url);
    }
    // A malformed URL is a validation error, not an unsafe one.
    const bad = await t.request('POST', '/v1/webhook-endpoints', { apiKey: org.apiKey, body: { url: 'https://', eventTypes: ['transfer.status_changed'] } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.code, 'validation_error');
    // Changing an endpoint's URL goes through the same check.
    assert.equal(r.connections, 0, 'nothing was ever connected to');
    const list = await t.request('GET', '/v1/webhook-endpoints', { apiKey: org.apiKey });
    assert.equal(list.body.meta.total, 0);
  });

  test('an endpoint whose name resolves to loopback by delivery time gets no request; the attempt records why', async () => {
    const org = await t.newOrganization();
    // As if it had resolved to a public address at registration: written straight to the store.
    const id = crypto.randomUUID();
    await t.server.db.kysely
      .insertInto('webhook_endpoints')
      .values({ id, organization_id: org.organizationId, url: `https://localhost:${r.port}/hooks`, event_types: ['transfer.status_changed'], secret: 'whsec_' + Buffer.alloc(32, 1).toString('base64') })
      .execute();
    const patch = await t.request('PATCH', `/v1/webhook-endpoints/${id}`, { apiKey: org.apiKey, body: { url: `https://127.0.0.1:${r.port}/hooks` } });
    assert.equal(patch.status, 422);
    assert.equal(patch.body.code, 'unsafe_webhook_url');

    await t.server.db.kysely.transaction().execute((trx) =>
      t.server.services.events.record(trx, { organizationId: org.organizationId, type: 'transfer.status_changed', data: { transferId: crypto.randomUUID(), version: 1 } }),
    );
    let delivery: any;
    // Up to a minute: the attempt runs on the job queue, which a loaded machine can hold up for seconds.
    for (let i = 0; i < 1200 && !delivery?.attempts.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      delivery = (await t.request('GET', `/v1/webhook-endpoints/${id}/deliveries`, { apiKey: org.apiKey })).body.data[0];
    }
    const attempt = delivery.attempts[0];
    assert.equal(attempt.statusCode, null);
    assert.match(attempt.error, /^address refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/);
    assert.equal(r.connections, 0);
  });
});
