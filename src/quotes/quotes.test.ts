import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { convert, toMinor } from '../platform/money.ts';
import { createTransfer, newCustomer, quoteOption } from '../transfers/test-support.ts';

const ACH = { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' };
const WIRE = { type: 'FIAT', country: 'US', currency: 'USD', method: 'WIRE' };
const SEPA_DE = { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' };
const SEPA_FR = { type: 'FIAT', country: 'FR', currency: 'EUR', method: 'SEPA' };
const PH_LOCAL = { type: 'FIAT', country: 'PH', currency: 'PHP', method: 'LOCAL' };
const AR_LOCAL = { type: 'FIAT', country: 'AR', currency: 'ARS', method: 'LOCAL' };
const JP_SWIFT = { type: 'FIAT', country: 'JP', currency: 'JPY', method: 'SWIFT' };
const POLYGON_USDC = { type: 'CRYPTO', blockchain: 'POLYGON', asset: 'USDC' };
const TTL_SECONDS = 10;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('quotes', () => {
  let t: TestServer;
  let a: TestOrganization;
  let b: TestOrganization;
  let entityA: string;
  let otherEntityA: string;
  let pendingEntityA: string;
  let entityB: string;

  const newEntity = async (org: TestOrganization, lastName = 'Lovelace'): Promise<string> => {
    const res = await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'INDIVIDUAL', firstName: 'Ada', lastName, country: 'US' } });
    assert.equal(res.status, 201, res.text);
    return res.body.id as string;
  };
  const quote = (body: Record<string, unknown>, org: TestOrganization = a) =>
    t.request('POST', '/v1/quotes', { apiKey: org.apiKey, body: { entityId: entityA, ...body } });
  const optionForTransfer = (optionId: string, org: TestOrganization = a) => t.server.services.quotes.getOptionForTransfer(org.organizationId, optionId);
  const legNames = (option: { legs: Array<{ kind: string; provider: string }> }) => option.legs.map((l) => `${l.kind}:${l.provider}`);

  before(async () => {
    t = await startTestServer({ CORRIDOR_QUOTE_TTL_SECONDS: String(TTL_SECONDS) });
    a = await t.newOrganization('Quotes A');
    b = await t.newOrganization('Quotes B');
    entityA = await newEntity(a);
    otherEntityA = await newEntity(a, 'Byron');
    pendingEntityA = await newEntity(a, 'Pending');
    entityB = await newEntity(b);
  });
  after(async () => t?.close());

  test('same-currency route (USD ACH → USD WIRE): collection and payout only, fees add up exactly', async () => {
    const res = await quote({ from: ACH, to: WIRE, amount: '1000.00', fixedSide: 'FROM' });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.id, /^[0-9a-f-]{36}$/);
    assert.match(res.body.createdAt, ISO_MS);
    assert.equal(res.body.options.length, 1);
    const [option] = res.body.options;
    assert.deepEqual(
      option.legs.map((l: { position: number; kind: string }) => [l.position, l.kind]),
      [[1, 'COLLECTION'], [2, 'PAYOUT']],
    );
    assert.equal(option.fromAmount, '1000.00');
    // 0.25 USD to collect by ACH, 15.00 USD to pay out by wire.
    assert.deepEqual(option.fees, [
      { type: 'COLLECTION_FEE', amount: '0.25', currency: 'USD', legPosition: 1 },
      { type: 'PAYOUT_FEE', amount: '15.00', currency: 'USD', legPosition: 2 },
    ]);
    assert.equal(option.totalFee, '15.25');
    assert.equal(option.feeCurrency, 'USD');
    assert.equal(option.toAmount, '984.75');
    assert.equal(toMinor(option.fromAmount, 'USD') - toMinor(option.totalFee, 'USD'), toMinor(option.toAmount, 'USD'));
    assert.equal(option.rate, '0.98475');
    assert.equal(option.status, 'OPEN');
    assert.deepEqual(res.body.advisories, []);
  });

  test('cross-currency direct conversion (USD ACH → EUR SEPA, 100.00 FROM), every figure computed by hand', async () => {
    const res = await quote({ from: ACH, to: SEPA_DE, amount: '100.00' });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.fixedSide, 'FROM', 'fixedSide defaults to FROM');
    const best = res.body.options[0];
    assert.deepEqual(legNames(best), ['COLLECTION:Sandbox ACH (US)', 'CONVERSION:Sandbox FX Desk', 'PAYOUT:Sandbox SEPA Credit Transfer']);
    // 100.00 − 0.25 = 99.75 USD; × 0.92 × (1 − 0.0030) = × 0.91724 → 91.494690 → DOWN 91.49 EUR; − 0.20 = 91.29 EUR.
    assert.equal(best.fromAmount, '100.00');
    assert.equal(best.toAmount, '91.29');
    assert.deepEqual(best.fees, [
      { type: 'COLLECTION_FEE', amount: '0.25', currency: 'USD', legPosition: 1 },
      { type: 'PAYOUT_FEE', amount: '0.20', currency: 'EUR', legPosition: 3 },
    ]);
    // 0.25 USD + 0.20 EUR ÷ 0.92 (= 0.2173… → UP 0.22 USD) = 0.47 USD.
    assert.equal(best.totalFee, '0.47');
    assert.equal(best.feeCurrency, 'USD');
    assert.equal(best.rate, '0.9129');
    assert.equal(best.fromAsset, 'USD');
    assert.equal(best.toAsset, 'EUR');
    assert.equal(best.eta.seconds, 86400 + 60 + 86400);
    const created = Date.parse(res.body.createdAt);
    assert.equal(Date.parse(best.eta.estimatedArrivalAt), created + best.eta.seconds * 1000);
    assert.equal(Date.parse(best.expiresAt), created + TTL_SECONDS * 1000);

    const stored = await optionForTransfer(best.id);
    assert.deepEqual(
      stored.legs.map((l) => [l.position, l.kind, l.providerId, l.fromAsset, l.toAsset, l.amountIn, l.fee, l.amountOut, l.rate]),
      [
        [1, 'COLLECTION', 'sim-us-ach', 'USD', 'USD', '100.00', '0.25', '99.75', '1'],
        [2, 'CONVERSION', 'sim-fx', 'USD', 'EUR', '99.75', '0.00', '91.49', '0.91724'],
        [3, 'PAYOUT', 'sim-sepa', 'EUR', 'EUR', '91.49', '0.20', '91.29', '1'],
      ],
    );
    assert.deepEqual(stored.legs[0]!.rail, ACH);
    assert.deepEqual(stored.legs[2]!.rail, SEPA_DE);
    assert.equal(stored.legs[1]!.rail, undefined);
    assert.equal(stored.requestAmount, '100.00');
    assert.equal(stored.status, 'OPEN');
    assert.equal(stored.entityId, entityA);
    assert.equal(stored.quoteId, res.body.id);
    assert.equal(stored.destination, null);
  });

  test('a bridged path via USDC has four legs, each handing on exactly what it made', async () => {
    const res = await quote({ from: ACH, to: SEPA_DE, amount: '250.00' });
    assert.equal(res.status, 201, res.text);
    const bridged = res.body.options.filter((o: { legs: unknown[] }) => o.legs.length === 4);
    assert.ok(bridged.length >= 1, 'a USD → USDC → EUR option is offered');
    const option = bridged[0];
    assert.deepEqual(
      option.legs.map((l: { position: number; kind: string; fromAsset: string; toAsset: string }) => [l.position, l.kind, l.fromAsset, l.toAsset]),
      [
        [1, 'COLLECTION', 'USD', 'USD'],
        [2, 'CONVERSION', 'USD', 'USDC'],
        [3, 'CONVERSION', 'USDC', 'EUR'],
        [4, 'PAYOUT', 'EUR', 'EUR'],
      ],
    );
    const stored = await optionForTransfer(option.id);
    for (const [i, leg] of stored.legs.entries()) {
      const afterFee = toMinor(leg.amountIn, leg.fromAsset) - toMinor(leg.fee, leg.fromAsset);
      if (leg.kind === 'CONVERSION') {
        // amountOut = (amountIn − fee) × rate, rounded DOWN to the target asset's precision.
        assert.equal(toMinor(leg.amountOut, leg.toAsset), convert(afterFee, leg.fromAsset, leg.toAsset, leg.rate, 'DOWN'), `leg ${leg.position}`);
      } else {
        assert.equal(toMinor(leg.amountOut, leg.toAsset), afterFee);
      }
      if (i > 0) assert.equal(leg.amountIn, stored.legs[i - 1]!.amountOut);
    }
    assert.equal(stored.legs[0]!.amountIn, option.fromAmount);
    assert.equal(stored.legs[3]!.amountOut, option.toAmount);

    const crypto = await quote({ from: ACH, to: POLYGON_USDC, amount: '50.00' });
    assert.equal(crypto.status, 201, crypto.text);
    assert.ok(crypto.body.options.length >= 1);
    assert.deepEqual(
      crypto.body.options[0].legs.map((l: { kind: string; fromAsset: string; toAsset: string }) => `${l.kind}:${l.fromAsset}>${l.toAsset}`),
      ['COLLECTION:USD>USD', 'CONVERSION:USD>USDC', 'PAYOUT:USDC>USDC'],
    );
    assert.match(crypto.body.options[0].toAmount, /^\d+\.\d{6}$/, 'USDC amounts carry 6 decimals');
  });

  test('options are ranked cheapest-delivered first, ETA breaking ties', async () => {
    const from = await quote({ from: ACH, to: SEPA_DE, amount: '100.00', fixedSide: 'FROM' });
    const options = from.body.options as Array<{ toAmount: string; eta: { seconds: number }; legs: unknown[] }>;
    assert.ok(options.length >= 4 && options.length <= 5, `several options (${options.length})`);
    for (let i = 1; i < options.length; i++) {
      const prev = toMinor(options[i - 1]!.toAmount, 'EUR');
      const cur = toMinor(options[i]!.toAmount, 'EUR');
      assert.ok(prev > cur || (prev === cur && options[i - 1]!.eta.seconds <= options[i]!.eta.seconds), `option ${i} is not ranked after ${i - 1}`);
    }
    // The direct and the bridged SEPA options deliver the same 91.29 EUR; the direct one is faster, so it leads.
    assert.deepEqual(options.slice(0, 2).map((o) => [o.toAmount, o.legs.length]), [['91.29', 3], ['91.29', 4]]);

    const to = await quote({ from: ACH, to: SEPA_DE, amount: '100.00', fixedSide: 'TO' });
    const sends = (to.body.options as Array<{ fromAmount: string }>).map((o) => toMinor(o.fromAmount, 'USD'));
    assert.ok(sends.length >= 4);
    for (let i = 1; i < sends.length; i++) assert.ok(sends[i - 1]! <= sends[i]!, 'fixedSide TO ranks the cheapest to send first');
  });

  test('fixedSide TO delivers exactly the requested toAmount, from the least fromAmount that can', async () => {
    const res = await quote({ from: ACH, to: SEPA_DE, amount: '500.00', fixedSide: 'TO' });
    assert.equal(res.status, 201, res.text);
    assert.ok(res.body.options.length >= 1);
    for (const option of res.body.options) assert.equal(option.toAmount, '500.00');
    const best = res.body.options[0];
    const path = legNames(best).join(' ');
    // Sending exactly that fromAmount over the same path delivers at least 500.00 EUR; one cent less does not.
    const enough = await quote({ from: ACH, to: SEPA_DE, amount: best.fromAmount, fixedSide: 'FROM' });
    const same = enough.body.options.find((o: { legs: Array<{ kind: string; provider: string }> }) => legNames(o).join(' ') === path);
    assert.ok(toMinor(same.toAmount, 'EUR') >= toMinor('500.00', 'EUR'));
    const oneCentLess = (toMinor(best.fromAmount, 'USD') - 1n).toString();
    const short = await quote({ from: ACH, to: SEPA_DE, amount: `${oneCentLess.slice(0, -2)}.${oneCentLess.slice(-2)}`, fixedSide: 'FROM' });
    const sameShort = short.body.options.find((o: { legs: Array<{ kind: string; provider: string }> }) => legNames(o).join(' ') === path);
    assert.ok(toMinor(sameShort.toAmount, 'EUR') < toMinor('500.00', 'EUR'));

    const stored = await optionForTransfer(best.id);
    assert.equal(stored.fixedSide, 'TO');
    assert.equal(stored.requestAmount, '500.00');
    assert.equal(stored.legs.at(-1)!.amountOut, '500.00');
  });

  test('a path through a DEGRADED provider is offered with a provider_degraded warning', async () => {
    const res = await quote({ from: ACH, to: PH_LOCAL, amount: '300.00' });
    assert.equal(res.status, 201, res.text);
    assert.ok(res.body.options.length >= 1);
    assert.equal(res.body.options[0].legs.at(-1).provider, 'Sandbox InstaPay (PH)');
    const degraded = res.body.advisories.filter((x: { code: string }) => x.code === 'provider_degraded');
    assert.equal(degraded.length, 1);
    assert.equal(degraded[0].severity, 'WARNING');
    assert.match(degraded[0].message, /Sandbox InstaPay \(PH\)/);
  });

  test('the all-DOWN AR/ARS route gives no option and a no_active_provider advisory, not an error', async () => {
    for (const activeOnly of [false, true]) {
      const res = await quote({ from: ACH, to: AR_LOCAL, amount: '100.00', activeOnly });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body.options, []);
      assert.equal(res.body.activeOnly, activeOnly);
      assert.equal(res.body.advisories.length, 1);
      assert.equal(res.body.advisories[0].code, 'no_active_provider');
      assert.equal(res.body.advisories[0].severity, 'WARNING');
      assert.match(res.body.advisories[0].message, /AR\/ARS\/LOCAL/);
    }
  });

  test('an amount every path’s fees would swallow gives no option and an amount_below_fees advisory', async () => {
    // USD ACH → USD WIRE charges 0.25 + 15.00 USD: 10.00 cannot pay for it.
    const res = await quote({ from: ACH, to: WIRE, amount: '10.00' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.options, []);
    assert.deepEqual(res.body.advisories.map((x: { code: string; severity: string }) => [x.code, x.severity]), [['amount_below_fees', 'WARNING']]);
    // Enough to cover the fees gets its option and no such advisory.
    const enough = await quote({ from: ACH, to: WIRE, amount: '15.26' });
    assert.equal(enough.body.options[0].toAmount, '0.01');
    assert.deepEqual(enough.body.advisories, []);
  });

  test('a rail the directory does not have is 422 unsupported_route', async () => {
    for (const [from, to] of [
      [{ type: 'FIAT', country: 'US', currency: 'USD', method: 'SEPA' }, SEPA_DE],
      [ACH, { type: 'CRYPTO', blockchain: 'SOLANA', asset: 'USDC' }],
      [ACH, { type: 'FIAT', country: 'DE', currency: 'USD', method: 'SEPA' }],
    ]) {
      const res = await quote({ from, to, amount: '10.00' });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.code, 'unsupported_route');
    }
  });

  test('amounts: more decimals than the fixed side allows, zero, or a malformed value are 422 validation_error at amount', async () => {
    for (const body of [
      { from: ACH, to: SEPA_DE, amount: '10.001' },
      { from: ACH, to: SEPA_DE, amount: '0.00' },
      { from: ACH, to: JP_SWIFT, amount: '100000.5', fixedSide: 'TO' },
      { from: ACH, to: SEPA_DE, amount: '1e3' },
      { from: ACH, to: SEPA_DE, amount: '-5.00' },
    ]) {
      const res = await quote(body);
      assert.equal(res.status, 422, `${body.amount}: ${res.text}`);
      assert.equal(res.body.code, 'validation_error');
      assert.ok(res.body.details.some((d: { path: string }) => d.path === 'amount'), res.text);
    }
    // Six decimals are fine when the fixed side is USDC, and JPY takes whole numbers.
    assert.equal((await quote({ from: POLYGON_USDC, to: ACH, amount: '25.123456' })).status, 201);
    assert.equal((await quote({ from: ACH, to: JP_SWIFT, amount: '100000', fixedSide: 'TO' })).status, 201);
  });

  test('entities: PENDING is 422 entity_not_onboarded; another organization’s is 404', async () => {
    const pending = await quote({ entityId: pendingEntityA, from: ACH, to: SEPA_DE, amount: '10.00' });
    assert.equal(pending.status, 422);
    assert.equal(pending.body.code, 'entity_not_onboarded');
    const foreign = await quote({ entityId: entityB, from: ACH, to: SEPA_DE, amount: '10.00' });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.code, 'not_found');
    const missing = await t.request('POST', '/v1/quotes', { apiKey: a.apiKey, body: { from: ACH, to: SEPA_DE, amount: '10.00' } });
    assert.equal(missing.status, 422);
    assert.ok(missing.body.details.some((d: { path: string }) => d.path === 'entityId'));
  });

  test('destinations: bound to their current version; wrong rail or entity is 422 destination_mismatch; another organization’s is 404', async () => {
    const account = await t.request('POST', '/v1/fiat-accounts', {
      apiKey: a.apiKey,
      body: {
        entityId: entityA,
        rail: { country: 'DE', currency: 'EUR', method: 'SEPA' },
        details: { iban: 'DE89370400440532013000' },
        beneficiary: { name: 'Ada Lovelace', type: 'INDIVIDUAL' },
        relationship: 'THIRD_PARTY',
      },
    });
    assert.equal(account.status, 201, account.text);
    const accountId = account.body.id as string;

    const bound = await quote({ from: ACH, to: SEPA_DE, amount: '100.00', destinationFiatAccountId: accountId });
    assert.equal(bound.status, 201, bound.text);
    assert.deepEqual(bound.body.destination, { type: 'FIAT_ACCOUNT', id: accountId, version: account.body.version ?? 1 });
    const stored = await optionForTransfer(bound.body.options[0].id);
    assert.deepEqual(stored.destination, { type: 'FIAT_ACCOUNT', id: accountId, version: account.body.version ?? 1 });

    const wrongRail = await quote({ from: ACH, to: SEPA_FR, amount: '100.00', destinationFiatAccountId: accountId });
    assert.equal(wrongRail.status, 422);
    assert.equal(wrongRail.body.code, 'destination_mismatch');
    const wrongEntity = await quote({ entityId: otherEntityA, from: ACH, to: SEPA_DE, amount: '100.00', destinationFiatAccountId: accountId });
    assert.equal(wrongEntity.status, 422);
    assert.equal(wrongEntity.body.code, 'destination_mismatch');
    const walletIdForFiat = await quote({ from: ACH, to: SEPA_DE, amount: '100.00', destinationCryptoWalletId: accountId });
    assert.ok([404, 422].includes(walletIdForFiat.status), 'a fiat account id is not a crypto wallet');
    const foreign = await quote({ entityId: entityB, from: ACH, to: SEPA_DE, amount: '100.00', destinationFiatAccountId: accountId }, b);
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.code, 'not_found');
    const both = await quote({ from: ACH, to: SEPA_DE, amount: '100.00', destinationFiatAccountId: accountId, destinationCryptoWalletId: accountId });
    assert.equal(both.status, 422);
    assert.equal(both.body.code, 'validation_error');

    const wallet = await t.request('POST', '/v1/crypto-wallets', {
      apiKey: a.apiKey,
      body: { entityId: entityA, blockchain: 'POLYGON', asset: 'USDC', address: '0x52908400098527886E0F7030069857D2E4169EE7', relationship: 'SELF' },
    });
    assert.equal(wallet.status, 201, wallet.text);
    const toWallet = await quote({ from: ACH, to: POLYGON_USDC, amount: '100.00', destinationCryptoWalletId: wallet.body.id });
    assert.equal(toWallet.status, 201, toWallet.text);
    assert.deepEqual(toWallet.body.destination, { type: 'CRYPTO_WALLET', id: wallet.body.id, version: wallet.body.version ?? 1 });
    const walletToFiat = await quote({ from: ACH, to: SEPA_DE, amount: '100.00', destinationCryptoWalletId: wallet.body.id });
    assert.equal(walletToFiat.status, 422);
    assert.equal(walletToFiat.body.code, 'destination_mismatch');
    const walletOfOtherEntity = await quote({ entityId: otherEntityA, from: ACH, to: POLYGON_USDC, amount: '100.00', destinationCryptoWalletId: wallet.body.id });
    assert.equal(walletOfOtherEntity.status, 422, walletOfOtherEntity.text);
    assert.equal(walletOfOtherEntity.body.code, 'destination_mismatch');

    // Once the account is edited, a new quote binds its new version (the old quote keeps the old one).
    const edited = await t.request('PATCH', `/v1/fiat-accounts/${accountId}`, { apiKey: a.apiKey, body: { details: { iban: 'DE02120300000000202051' } } });
    assert.equal(edited.status, 200, edited.text);
    assert.equal(edited.body.version, 2);
    const rebound = await quote({ from: ACH, to: SEPA_DE, amount: '100.00', destinationFiatAccountId: accountId });
    assert.equal(rebound.status, 201, rebound.text);
    assert.deepEqual(rebound.body.destination, { type: 'FIAT_ACCOUNT', id: accountId, version: 2 });
    assert.deepEqual((await optionForTransfer(rebound.body.options[0].id)).destination, { type: 'FIAT_ACCOUNT', id: accountId, version: 2 });
    assert.deepEqual((await optionForTransfer(bound.body.options[0].id)).destination, { type: 'FIAT_ACCOUNT', id: accountId, version: 1 });
  });

  test('GET /v1/quotes/:id returns the stored quote to its organization only', async () => {
    const created = await quote({ from: ACH, to: SEPA_DE, amount: '42.00' });
    const read = await t.request('GET', `/v1/quotes/${created.body.id}`, { apiKey: a.apiKey });
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, created.body);
    const foreign = await t.request('GET', `/v1/quotes/${created.body.id}`, { apiKey: b.apiKey });
    assert.equal(foreign.status, 404);
    await assert.rejects(optionForTransfer(created.body.options[0].id, b), (err: { statusCode?: number; code?: string }) => err.statusCode === 404 && err.code === 'not_found');
    await assert.rejects(optionForTransfer('00000000-0000-4000-8000-000000000000'), (err: { statusCode?: number }) => err.statusCode === 404);
  });

  test('scopes: quotes:write is needed to quote', async () => {
    const key = await t.request('POST', '/v1/api-keys', { token: a.token, body: { name: 'read only', scopes: ['transfers:read'] } });
    assert.equal(key.status, 201, key.text);
    const denied = await t.request('POST', '/v1/quotes', { apiKey: key.body.secret, body: { entityId: entityA, from: ACH, to: WIRE, amount: '10.00' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'insufficient_permissions');
    const created = await quote({ from: ACH, to: WIRE, amount: '10.00' });
    assert.equal((await t.request('GET', `/v1/quotes/${created.body.id}`, { apiKey: key.body.secret })).status, 200, 'transfers:read may read a quote');
  });

  test('an option a transfer took reads USED in GET /v1/quotes/{id}; its siblings stay OPEN', async () => {
    const c = await newCustomer(t, 'Quotes used');
    const { optionId, quote: created } = await quoteOption(t, c, '20.00');
    assert.ok(created.options.length > 1, 'the route has several options');
    const before = await t.request('GET', `/v1/quotes/${created.id}`, { apiKey: c.org.apiKey });
    assert.deepEqual(before.body.options.map((o: { status: string }) => o.status), created.options.map(() => 'OPEN'));
    assert.equal((await createTransfer(t, c, optionId)).status, 201);
    const read = await t.request('GET', `/v1/quotes/${created.id}`, { apiKey: c.org.apiKey });
    assert.equal(read.body.options[0].status, 'USED');
    assert.deepEqual(read.body.options.slice(1).map((o: { status: string }) => o.status), created.options.slice(1).map(() => 'OPEN'));
    const again = await createTransfer(t, c, optionId);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'quote_option_used');
  });

  test('the OpenAPI document describes the quote request, including the crypto destination field', async () => {
    const doc = await t.request('GET', '/v1/openapi.json');
    const body = doc.body.paths['/v1/quotes'].post.requestBody.content['application/json'].schema;
    assert.ok(body.properties.destinationCryptoWalletId, 'destinationCryptoWalletId is documented');
    assert.match(body.properties.fixedSide.description, /default/i);
    assert.ok(doc.body.paths['/v1/quotes/{id}'].get);
  });

  test('quotes.expire-options marks options past expiresAt EXPIRED, and they can no longer be used', async () => {
    const c = await newCustomer(t, 'Quotes expiry');
    const { optionId, option, quote: created } = await quoteOption(t, c, '30.00');
    const expiresAt = Date.parse(option.expiresAt);
    // Another option a transfer took before it expired: it stays USED, whatever the job does.
    const { optionId: takenId, quote: taken } = await quoteOption(t, c, '31.00');
    assert.equal((await createTransfer(t, c, takenId)).status, 201);
    assert.equal(await t.server.services.quotes.expireOptions(), 0, 'nothing is due yet');
    const statusOf = async (id = created.id as string) => (await t.request('GET', `/v1/quotes/${id}`, { apiKey: c.org.apiKey })).body.options[0].status as string;
    assert.equal(await statusOf(), 'OPEN');

    while (Date.now() <= expiresAt + 50) await new Promise((r) => setTimeout(r, 100));
    assert.equal((await t.server.services.quotes.getOptionForTransfer(c.org.organizationId, optionId)).status, 'EXPIRED', 'an elapsed option reads as EXPIRED before the job runs');
    // Regression: GET /v1/quotes/{id} showed the stored OPEN until the job ran.
    const stored = await t.server.db.kysely.selectFrom('quote_options').select('status').where('id', '=', optionId).executeTakeFirstOrThrow();
    assert.equal(stored.status, 'OPEN', 'the job has not run yet');
    assert.equal(await statusOf(), 'EXPIRED', 'the quote read shows it EXPIRED too');
    await t.server.queue.send('quotes.expire-options', {});
    const deadline = Date.now() + 30_000;
    const storedStatus = async () => (await t.server.db.kysely.selectFrom('quote_options').select('status').where('id', '=', optionId).executeTakeFirstOrThrow()).status as string;
    while ((await storedStatus()) !== 'EXPIRED' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    assert.equal(await storedStatus(), 'EXPIRED', 'the job stored it');
    assert.equal(await statusOf(), 'EXPIRED');
    const late = await createTransfer(t, c, optionId);
    assert.equal(late.status, 422);
    assert.equal(late.body.code, 'quote_expired', 'an expired option cannot be used');
    // The option a transfer took reads USED after its expiry and after the job, too.
    assert.ok(Date.now() > Date.parse(taken.options[0].expiresAt));
    await t.server.services.quotes.expireOptions();
    assert.equal(await statusOf(taken.id as string), 'USED');
  });
});

// A small network of its own, to pin the ranking tie-breaks and the advisories the sandbox
// network cannot show: equal amounts that differ only by ETA, a DEGRADED provider priced but not
// among the options kept, and a rail nobody collects on.
describe('quotes on a network of its own', () => {
  let t: TestServer;
  let org: TestOrganization;
  let entity: string;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-quotes-'));
  const noFees = { fixed: '0', percentBps: 0, fxSpreadBps: 0 };
  const provider = (id: string, availability: string, capabilities: unknown[]) => ({ id, displayName: `Net ${id}`, adapter: 'simulator', availability, credentials: {}, capabilities });
  const rail = (kind: string, r: Record<string, string>, fixed: string, etaSeconds: number) => ({ kind, rail: r, fees: { ...noFees, fixed }, etaSeconds });

  before(async () => {
    const file = path.join(tmp, 'providers.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        environment: 'sandbox',
        providers: [
          provider('collect-good', 'ACTIVE', [rail('COLLECTION', ACH, '0.00', 100)]),
          // Fast but dear: every path through it delivers less than the five kept.
          provider('collect-slow-lane', 'DEGRADED', [rail('COLLECTION', ACH, '5.00', 1)]),
          // The same fee on every payout; the later the id, the faster the payout.
          ...[500, 400, 300, 200, 100].map((eta, i) => provider(`pay-${i + 1}`, 'ACTIVE', [rail('PAYOUT', WIRE, '1.00', eta)])),
          // Pays out on SEPA, but nobody collects there and nobody converts EUR.
          provider('sepa-payer', 'ACTIVE', [rail('PAYOUT', SEPA_DE, '0.00', 60)]),
        ],
      }),
    );
    t = await startTestServer({ CORRIDOR_PROVIDERS_FILE: file });
    org = await t.newOrganization('Own network');
    const created = await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'INDIVIDUAL', firstName: 'Ada', lastName: 'Lovelace', country: 'US' } });
    assert.equal(created.status, 201, created.text);
    entity = created.body.id as string;
  });
  after(async () => {
    await t?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const quote = (body: Record<string, unknown>) => t.request('POST', '/v1/quotes', { apiKey: org.apiKey, body: { entityId: entity, ...body } });

  test('equal amounts rank the shorter ETA first; a DEGRADED provider only in options cut off raises no warning', async () => {
    const res = await quote({ from: ACH, to: WIRE, amount: '100.00' });
    assert.equal(res.status, 201, res.text);
    // Ten paths are priced; the five through the 5.00 USD collector deliver less and are cut.
    assert.deepEqual(
      res.body.options.map((o: { toAmount: string; eta: { seconds: number }; legs: Array<{ provider: string }> }) => [o.toAmount, o.eta.seconds, o.legs.map((l) => l.provider).join(' > ')]),
      [
        ['99.00', 200, 'Net collect-good > Net pay-5'],
        ['99.00', 300, 'Net collect-good > Net pay-4'],
        ['99.00', 400, 'Net collect-good > Net pay-3'],
        ['99.00', 500, 'Net collect-good > Net pay-2'],
        ['99.00', 600, 'Net collect-good > Net pay-1'],
      ],
    );
    assert.deepEqual(res.body.advisories, [], 'the degraded collector serves none of the options offered');
  });

  test('a rail nobody collects on and a pair nobody converts are named as advisories, not errors', async () => {
    const res = await quote({ from: SEPA_DE, to: WIRE, amount: '100.00' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.options, []);
    assert.deepEqual(
      res.body.advisories.map((x: { code: string; severity: string; message: string }) => [x.code, x.severity, x.message]),
      [
        ['no_provider', 'WARNING', 'No provider collects funds on DE/EUR/SEPA'],
        ['no_conversion_path', 'WARNING', 'No provider converts EUR to USD, directly or through one intermediate asset'],
      ],
    );
  });
});
