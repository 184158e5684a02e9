import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { operatorToken } from '../../test/helpers/ops.ts';

// notes/SANDBOX_NETWORK.md: the rails the sandbox serves (the destinations domain has a schema for each).
const SANDBOX_FIAT = [
  'US/USD/ACH', 'US/USD/WIRE',
  'DE/EUR/SEPA', 'FR/EUR/SEPA', 'ES/EUR/SEPA', 'NL/EUR/SEPA', 'IT/EUR/SEPA',
  'GB/GBP/LOCAL', 'BR/BRL/PIX', 'MX/MXN/SPEI', 'NG/NGN/LOCAL', 'KE/KES/LOCAL', 'PH/PHP/LOCAL', 'AR/ARS/LOCAL',
  'SG/SGD/SWIFT', 'AE/AED/SWIFT', 'JP/JPY/SWIFT', 'CH/CHF/SWIFT',
];
const SANDBOX_CRYPTO = ['ETHEREUM/USDC', 'POLYGON/USDC', 'ETHEREUM/ETH', 'BITCOIN/BTC', 'STELLAR/USDC'];

type Provider = { name: string; status: string };
type FiatEntry = { country: string; currency: string; method: string; activeProviderCount: number; providers: Provider[] };
type CryptoEntry = { blockchain: string; asset: string; activeProviderCount: number; providers: Provider[] };
const fiatKey = (r: FiatEntry) => `${r.country}/${r.currency}/${r.method}`;
const cryptoKey = (r: CryptoEntry) => `${r.blockchain}/${r.asset}`;

/** Polls until `check` holds, for at most `seconds`. */
async function eventually(seconds: number, check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(100);
  }
  assert.fail(`${what} did not happen within ${seconds} s`);
}

describe('rails', () => {
  let t: TestServer;
  let org: TestOrganization;
  let opsToken: string;
  before(async () => {
    t = await startTestServer({ CORRIDOR_RAILS_REFRESH_SECONDS: '1' });
    org = await t.newOrganization();
    opsToken = await operatorToken(t);
  });
  after(async () => t.close());

  const rails = async (query = '') => {
    const res = await t.request('GET', `/v1/rails${query}`, { apiKey: org.apiKey });
    assert.equal(res.status, 200, res.text);
    return res.body as { fiat: FiatEntry[]; crypto: CryptoEntry[] };
  };

  test('GET /v1/rails answers {fiat, crypto} with exactly the sandbox network, in the DECISIONS §10 shape', async () => {
    const body = await rails();
    assert.deepEqual(Object.keys(body).sort(), ['crypto', 'fiat']);
    assert.deepEqual(body.fiat.map(fiatKey).sort(), [...SANDBOX_FIAT].sort());
    assert.deepEqual(body.crypto.map(cryptoKey).sort(), [...SANDBOX_CRYPTO].sort());
    for (const r of body.fiat) assert.deepEqual(Object.keys(r).sort(), ['activeProviderCount', 'country', 'currency', 'method', 'providers']);
    for (const r of body.crypto) assert.deepEqual(Object.keys(r).sort(), ['activeProviderCount', 'asset', 'blockchain', 'providers']);
    for (const r of [...body.fiat, ...body.crypto]) {
      assert.ok(r.providers.length > 0);
      for (const p of r.providers) assert.deepEqual(Object.keys(p).sort(), ['name', 'status']);
      assert.equal(r.activeProviderCount, r.providers.filter((p) => p.status !== 'DOWN').length);
    }
    // A route served by two providers lists both, by their customer-visible names.
    const de = body.fiat.find((r) => fiatKey(r) === 'DE/EUR/SEPA')!;
    assert.deepEqual(de.providers, [
      { name: 'Sandbox SEPA Credit Transfer', status: 'ACTIVE' },
      { name: 'Sandbox SEPA Instant', status: 'ACTIVE' },
    ]);
    assert.equal(de.activeProviderCount, 2);
    // Both API keys and user tokens may read it; anonymous callers may not.
    assert.equal((await t.request('GET', '/v1/rails', { token: org.token })).status, 200);
    assert.equal((await t.request('GET', '/v1/rails')).status, 401);
  });

  test('methods are reported exactly as configured, never as a generic label', async () => {
    const body = await rails();
    const methodOf = (country: string) => new Set(body.fiat.filter((r) => r.country === country).map((r) => r.method));
    for (const c of ['DE', 'FR', 'ES', 'NL', 'IT']) assert.deepEqual(methodOf(c), new Set(['SEPA']));
    assert.deepEqual(methodOf('BR'), new Set(['PIX']));
    assert.deepEqual(methodOf('MX'), new Set(['SPEI']));
    assert.deepEqual(methodOf('US'), new Set(['ACH', 'WIRE']));
    for (const c of ['SG', 'AE', 'JP', 'CH']) assert.deepEqual(methodOf(c), new Set(['SWIFT']));
    for (const c of ['GB', 'NG', 'KE', 'PH', 'AR']) assert.deepEqual(methodOf(c), new Set(['LOCAL']));
  });

  test('activeOnly=true leaves out AR/ARS/LOCAL (every provider DOWN) and keeps the DEGRADED PH rail', async () => {
    const all = await rails('?activeOnly=false');
    const ar = all.fiat.find((r) => fiatKey(r) === 'AR/ARS/LOCAL')!;
    assert.equal(ar.activeProviderCount, 0);
    assert.deepEqual(ar.providers, [{ name: 'Sandbox Transferencias 3.0 (AR)', status: 'DOWN' }]);

    const active = await rails('?activeOnly=true');
    assert.ok(!active.fiat.some((r) => fiatKey(r) === 'AR/ARS/LOCAL'));
    assert.deepEqual(active.fiat.map(fiatKey).sort(), SANDBOX_FIAT.filter((k) => k !== 'AR/ARS/LOCAL').sort());
    assert.equal(active.crypto.length, SANDBOX_CRYPTO.length);
    const ph = active.fiat.find((r) => fiatKey(r) === 'PH/PHP/LOCAL')!;
    assert.equal(ph.activeProviderCount, 1);
    assert.deepEqual(ph.providers, [{ name: 'Sandbox InstaPay (PH)', status: 'DEGRADED' }]);

    const bad = await t.request('GET', '/v1/rails?activeOnly=maybe', { apiKey: org.apiKey });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.details[0].path, 'query.activeOnly');
  });

  test('a provider set DOWN through the ops endpoint leaves activeOnly results, and comes back when restored', async () => {
    const down = await t.request('PATCH', '/v1/ops/providers/sim-mx-spei', { token: opsToken, body: { status: 'DOWN' } });
    assert.equal(down.status, 200);
    await eventually(5, async () => !(await rails('?activeOnly=true')).fiat.some((r) => fiatKey(r) === 'MX/MXN/SPEI'), 'MX/MXN/SPEI leaving activeOnly');
    const mx = (await rails()).fiat.find((r) => fiatKey(r) === 'MX/MXN/SPEI')!;
    assert.deepEqual([mx.activeProviderCount, mx.providers[0]!.status], [0, 'DOWN']);

    const restored = await t.request('PATCH', '/v1/ops/providers/sim-mx-spei', { token: opsToken, body: { status: null } });
    assert.equal(restored.status, 200);
    await eventually(5, async () => (await rails('?activeOnly=true')).fiat.some((r) => fiatKey(r) === 'MX/MXN/SPEI'), 'MX/MXN/SPEI returning');
  });

  test('activeOnly=true leaves out a crypto rail whose only provider is DOWN', async () => {
    const down = await t.request('PATCH', '/v1/ops/providers/sim-bitcoin', { token: opsToken, body: { status: 'DOWN' } });
    assert.equal(down.status, 200, down.text);
    await t.server.services.rails.refresh();
    const btc = (await rails()).crypto.find((r) => cryptoKey(r) === 'BITCOIN/BTC')!;
    assert.deepEqual([btc.activeProviderCount, btc.providers], [0, [{ name: btc.providers[0]!.name, status: 'DOWN' }]]);
    assert.deepEqual((await rails('?activeOnly=true')).crypto.map(cryptoKey).sort(), SANDBOX_CRYPTO.filter((k) => k !== 'BITCOIN/BTC').sort());
    const restored = await t.request('PATCH', '/v1/ops/providers/sim-bitcoin', { token: opsToken, body: { status: null } });
    assert.equal(restored.status, 200, restored.text);
    await t.server.services.rails.refresh();
    assert.ok((await rails('?activeOnly=true')).crypto.some((r) => cryptoKey(r) === 'BITCOIN/BTC'));
  });

  test('a status change made by another process shows up within the refresh interval', async () => {
    // Another Corridor process writes the override; this one only learns of it by refreshing.
    await t.server.db.kysely
      .insertInto('provider_status')
      .values({ provider_id: 'sim-ke-mpesa', status: 'DOWN', reason: 'set elsewhere' })
      .execute();
    await eventually(5, async () => !(await rails('?activeOnly=true')).fiat.some((r) => fiatKey(r) === 'KE/KES/LOCAL'), 'KE/KES/LOCAL leaving activeOnly');
    assert.equal(t.server.services.providers.get('sim-ke-mpesa')!.availability(), 'DOWN');

    // And an AR provider brought back elsewhere makes the AR route appear.
    await t.server.db.kysely.insertInto('provider_status').values({ provider_id: 'sim-ar-transferencias', status: 'DEGRADED' }).execute();
    await eventually(5, async () => (await rails('?activeOnly=true')).fiat.some((r) => fiatKey(r) === 'AR/ARS/LOCAL'), 'AR/ARS/LOCAL joining activeOnly');
    await t.server.db.kysely.deleteFrom('provider_status').where('provider_id', 'in', ['sim-ke-mpesa', 'sim-ar-transferencias']).execute();
    await eventually(5, async () => (await rails('?activeOnly=true')).fiat.some((r) => fiatKey(r) === 'KE/KES/LOCAL'), 'KE/KES/LOCAL returning');
  });

  test('other domains ask the rail service whether a route exists', () => {
    const { rails: service } = t.server.services;
    assert.equal(service.hasFiatRail({ country: 'BR', currency: 'BRL', method: 'PIX' }), true);
    // A route whose providers are all DOWN still exists (saved destinations on it stay valid).
    assert.equal(service.hasFiatRail({ country: 'AR', currency: 'ARS', method: 'LOCAL' }), true);
    assert.equal(service.hasFiatRail({ country: 'BR', currency: 'BRL', method: 'LOCAL' }), false);
    assert.equal(service.hasFiatRail({ country: 'DE', currency: 'USD', method: 'SEPA' }), false);
    assert.equal(service.hasCryptoRail({ blockchain: 'STELLAR', asset: 'USDC' }), true);
    assert.equal(service.hasCryptoRail({ blockchain: 'POLYGON', asset: 'ETH' }), false);
    const payers = service.providersFor({ type: 'FIAT', country: 'NL', currency: 'EUR', method: 'SEPA' }, 'PAYOUT').map((p) => p.id);
    assert.deepEqual(payers.sort(), ['sim-sepa', 'sim-sepa-instant']);
    assert.deepEqual(service.providersFor({ type: 'FIAT', country: 'AR', currency: 'ARS', method: 'LOCAL' }, 'PAYOUT', { activeOnly: true }), []);
  });
});
