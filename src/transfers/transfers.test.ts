import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { fromMinor, toMinor } from '../platform/money.ts';
import {
  ACH,
  ETHEREUM_USDC,
  SEPA_DE,
  TERMINAL,
  assertHistoryConsistent,
  createTransfer,
  destinationOf,
  driveToRest,
  fund,
  getTransfer,
  newCustomer,
  newEntity,
  newFiatAccount,
  newTransfer,
  quoteOption,
  waitFor,
} from './test-support.ts';
import type { Customer } from './test-support.ts';

const OPS_EMAIL = 'ops@corridor.test';
const OPS_PASSWORD = 'operations-password-1';
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const PAYMENT_REFERENCES = {
  sourceSystem: 'SAP-ERP',
  originalMessageId: 'MSG-2024-0001',
  originalMessageNameId: 'pain.001.001.03',
  originalPaymentInformationId: 'PMTINF-1',
  originalInstructionId: 'INSTR-1',
  originalEndToEndId: 'E2E-1',
};

describe('transfers', () => {
  let t: TestServer;
  let a: Customer;
  let b: Customer;
  let opsToken: string;

  before(async () => {
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '1000', CORRIDOR_OPS_EMAIL: OPS_EMAIL, CORRIDOR_OPS_PASSWORD: OPS_PASSWORD });
    a = await newCustomer(t, 'Transfers A');
    b = await newCustomer(t, 'Transfers B');
    const token = await t.request('POST', '/v1/auth/token', { body: { email: OPS_EMAIL, password: OPS_PASSWORD } });
    assert.equal(token.status, 200, token.text);
    opsToken = token.body.accessToken;
  });
  after(async () => t?.close());

  test('creation answers 201 with the destination snapshot, quoted amounts, pending legs and the first timeline item', async () => {
    const { optionId, option } = await quoteOption(t, a, '1000.00');
    const res = await createTransfer(t, a, optionId, { extra: { clientReference: 'invoice-42', paymentReferences: PAYMENT_REFERENCES } });
    assert.equal(res.status, 201, res.text);
    const tr = res.body;
    assert.equal(tr.status, 'PENDING_SETUP');
    assert.equal(tr.blockingParty, 'PROVIDER');
    assert.equal(tr.version, 1);
    assert.equal(tr.entityId, a.entityId);
    assert.equal(tr.quoteOptionId, optionId);
    assert.equal(tr.clientReference, 'invoice-42');
    assert.deepEqual(tr.paymentReferences, PAYMENT_REFERENCES);
    assert.match(tr.createdAt, ISO_MS);
    assert.match(tr.updatedAt, ISO_MS);
    assert.equal(tr.quoted.sourceAmount, option.fromAmount);
    assert.equal(tr.quoted.destinationAmount, option.toAmount);
    assert.equal(tr.quoted.feeTotal, option.totalFee);
    assert.deepEqual(tr.actual, { sourceAmount: null, destinationAmount: null, feeTotal: null });
    assert.equal(tr.destination.type, 'FIAT_ACCOUNT');
    assert.equal(tr.destination.id, a.fiatAccountId);
    assert.equal(tr.destination.version, 1);
    assert.equal(tr.destination.snapshot.instructions.details.iban, 'DE89370400440532013000');
    assert.equal('progressStage' in tr, false, 'no top-level progressStage');
    assert.deepEqual(
      tr.legs.map((l: any) => [l.position, l.kind, l.status, l.progressStage, l.providerReference]),
      option.legs.map((l: any) => [l.position, l.kind, 'PENDING', { COLLECTION: 'AWAITING_FUNDS', CONVERSION: 'ORDER_PLACED', PAYOUT: 'PAYOUT_INITIATED' }[l.kind as string], null]),
    );
    assert.ok(tr.legs.every((l: any) => typeof l.provider === 'string' && !('providerId' in l)));
    assert.equal(tr.timeline.length, 1);
    assert.deepEqual({ ...tr.timeline[0], occurredAt: undefined }, {
      type: 'STATUS', status: 'PENDING_SETUP', previousStatus: null, blockingParty: 'PROVIDER', reason: null, leg: null, progressStage: 'AWAITING_FUNDS', version: 1, occurredAt: undefined,
    });
    const again = await getTransfer(t, a, tr.id);
    assert.equal(again.id, tr.id);
    await assertHistoryConsistent(t, again);
  });

  test('idempotency: a replay answers the same status and body with Idempotent-Replayed; another request under the key is 409; no key is 400', async () => {
    const { optionId } = await quoteOption(t, a, '250.00');
    const key = randomUUID();
    const first = await createTransfer(t, a, optionId, { key });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const replay = await createTransfer(t, a, optionId, { key });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, first.body);

    const other = await createTransfer(t, a, optionId, { key, extra: { clientReference: 'something else' } });
    assert.equal(other.status, 409);
    assert.equal(other.body.code, 'idempotency_key_reused');

    const missing = await createTransfer(t, a, optionId, { key: null });
    assert.equal(missing.status, 400);
    assert.deepEqual(Object.keys(missing.body).sort(), ['code', 'message']);
    assert.equal(missing.body.code, 'idempotency_key_required');

    const count = await t.server.db.kysely.selectFrom('transfers').select(sql<string>`count(*)`.as('n')).where('quote_option_id', '=', optionId).executeTakeFirstOrThrow();
    assert.equal(Number(count.n), 1);
  });

  test('refusals: option used (another key), option expired, destination edited, entity not onboarded, destination mismatch, paymentReferences over 35 characters', async () => {
    const used = await quoteOption(t, a, '100.00');
    assert.equal((await createTransfer(t, a, used.optionId)).status, 201);
    const again = await createTransfer(t, a, used.optionId);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'quote_option_used');

    const expired = await quoteOption(t, a, '100.00');
    await t.server.db.kysely.updateTable('quote_options').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', expired.optionId).execute();
    const late = await createTransfer(t, a, expired.optionId);
    assert.equal(late.status, 422);
    assert.equal(late.body.code, 'quote_expired');

    // The destination is edited after the quote: version 2 ≠ the quoted version 1.
    const entity = await newEntity(t, a.org, 'Editor');
    const account = await newFiatAccount(t, a.org, entity);
    const c: Customer = { ...a, entityId: entity, fiatAccountId: account };
    const before = await quoteOption(t, c, '100.00');
    const patch = await t.request('PATCH', `/v1/fiat-accounts/${account}`, { apiKey: a.org.apiKey, body: { details: { iban: 'DE02120300000000202051' } } });
    assert.equal(patch.status, 200, patch.text);
    const changed = await createTransfer(t, c, before.optionId);
    assert.equal(changed.status, 409, changed.text);
    assert.equal(changed.body.code, 'quote_destination_changed');

    const pending = await newEntity(t, a.org, 'Pending');
    const fresh = await quoteOption(t, a, '100.00');
    const notOnboarded = await createTransfer(t, { ...a, entityId: pending }, fresh.optionId);
    assert.equal(notOnboarded.status, 422);
    assert.equal(notOnboarded.body.code, 'entity_not_onboarded');

    // Another saved account of the same entity than the one the option was quoted for.
    const otherAccount = await newFiatAccount(t, a.org, a.entityId, 'DE02120300000000202051');
    const mismatch = await createTransfer(t, { ...a, fiatAccountId: otherAccount }, fresh.optionId);
    assert.equal(mismatch.status, 422);
    assert.equal(mismatch.body.code, 'destination_mismatch');
    // A wallet where the option pays a fiat account.
    const wrongType = await createTransfer(t, a, fresh.optionId, { to: 'CRYPTO' });
    assert.equal(wrongType.status, 422);
    assert.equal(wrongType.body.code, 'destination_mismatch');

    const tooLong = await createTransfer(t, a, fresh.optionId, { extra: { paymentReferences: { ...PAYMENT_REFERENCES, originalEndToEndId: 'E'.repeat(36) } } });
    assert.equal(tooLong.status, 422);
    assert.equal(tooLong.body.code, 'validation_error');
    assert.ok(tooLong.body.details.some((d: any) => d.path.includes('originalEndToEndId')), tooLong.text);
    const partial = await createTransfer(t, a, fresh.optionId, { extra: { paymentReferences: { sourceSystem: 'X' } } });
    assert.equal(partial.status, 422);

    // None of the refused requests used the option.
    assert.equal((await createTransfer(t, a, fresh.optionId)).status, 201);

    // An option quoted without a destination takes any saved destination of the entity on its rail.
    const unbound = await t.request('POST', '/v1/quotes', {
      apiKey: a.org.apiKey,
      body: { entityId: a.entityId, from: { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' }, to: { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' }, amount: '55.00', fixedSide: 'FROM' },
    });
    assert.equal(unbound.status, 201, unbound.text);
    const offRail = await createTransfer(t, a, unbound.body.options[0].id, { to: 'CRYPTO' });
    assert.equal(offRail.status, 422);
    assert.equal(offRail.body.code, 'destination_mismatch');
    const otherEntity = await newEntity(t, a.org, 'Stranger');
    const notTheirs = await createTransfer(t, { ...a, entityId: otherEntity }, unbound.body.options[0].id);
    assert.equal(notTheirs.status, 422);
    assert.equal(notTheirs.body.code, 'quote_entity_mismatch');
    // The entity's option paid to a saved account of another entity of the organization.
    const strangersAccount = await newFiatAccount(t, a.org, otherEntity);
    const notItsAccount = await createTransfer(t, { ...a, fiatAccountId: strangersAccount }, unbound.body.options[0].id);
    assert.equal(notItsAccount.status, 422, notItsAccount.text);
    assert.equal(notItsAccount.body.code, 'destination_mismatch');
    const bound = await createTransfer(t, a, unbound.body.options[0].id);
    assert.equal(bound.status, 201, bound.text);
    assert.equal(bound.body.destination.id, a.fiatAccountId);
  });

  test('COMPLETED: funded, every leg executed through its provider, actual amounts beside the quoted ones', async () => {
    const { optionId, option } = await quoteOption(t, a, '1000.00');
    const res = await createTransfer(t, a, optionId);
    assert.equal(res.status, 201, res.text);
    const created = res.body;
    const ready = await waitFor(t, a, created.id, (tr) => tr.status === 'READY_TO_FUND');
    assert.equal(ready.blockingParty, 'CUSTOMER');
    assert.equal(ready.legs[0].status, 'PROCESSING');
    assert.match(ready.legs[0].providerReference, /^SIM-/);
    const funded = await fund(t, a, created.id);
    assert.ok(['IN_PROGRESS', 'COMPLETED'].includes(funded.status), funded.status);
    assert.equal(funded.actual.sourceAmount, created.quoted.sourceAmount);
    assert.equal(funded.legs[0].status, 'COMPLETED');
    assert.equal(funded.legs[0].progressStage, 'FUNDS_SETTLED');
    const done = await driveToRest(t, a, created.id);
    assert.equal(done.status, 'COMPLETED');
    assert.equal(done.blockingParty, 'NONE');
    assert.ok(done.legs.every((l: any) => l.status === 'COMPLETED' && l.providerReference));
    assert.deepEqual(done.legs.map((l: any) => l.progressStage), done.legs.map((l: any) => ({ COLLECTION: 'FUNDS_SETTLED', CONVERSION: 'CONVERTED_FUNDS_SETTLED', PAYOUT: 'DELIVERED_TO_BENEFICIARY' })[l.kind as string]));
    assert.equal(done.actual.destinationAmount, done.quoted.destinationAmount);
    assert.equal(done.actual.feeTotal, done.quoted.feeTotal);
    for (const leg of done.legs) assert.equal(leg.actualAmountOut, leg.quotedAmountOut);
    // What each provider was handed: the customer's whole payment to the collector, every later
    // leg its quoted input net of its own fee.
    for (const leg of done.legs) {
      const fee = option.fees.find((f: any) => f.legPosition === leg.position);
      const handed = leg.kind === 'COLLECTION' || !fee ? leg.quotedAmountIn : fromMinor(toMinor(leg.quotedAmountIn, leg.fromAsset) - toMinor(fee.amount, leg.fromAsset), leg.fromAsset);
      assert.equal(leg.actualAmountIn, handed, `leg ${leg.position} (${leg.kind})`);
    }
    assert.ok(option.fees.some((f: any) => f.legPosition > 1), 'a leg after the collection charges a fee');
    assert.deepEqual(
      done.timeline.filter((e: any) => e.type === 'STATUS').map((e: any) => [e.status, e.blockingParty]),
      [['PENDING_SETUP', 'PROVIDER'], ['READY_TO_FUND', 'CUSTOMER'], ['IN_PROGRESS', 'PROVIDER'], ['COMPLETED', 'NONE']],
    );
    await assertHistoryConsistent(t, done);
  });

  const terminalPaths = [
    { amount: '500.91', status: 'FAILED', reason: 'payout_failed', legs: { PAYOUT: 'FAILED' } },
    { amount: '500.92', status: 'RETURNED', reason: 'payout_returned', legs: { PAYOUT: 'RETURNED' } },
    { amount: '500.94', status: 'REFUNDED', reason: 'conversion_failed', legs: { CONVERSION: 'FAILED', PAYOUT: 'CANCELED' } },
  ];
  for (const path of terminalPaths) {
    test(`magic amount ${path.amount} ends ${path.status}`, async () => {
      const created = await newTransfer(t, a, path.amount);
      await driveToRest(t, a, created.id);
      await fund(t, a, created.id);
      const done = await driveToRest(t, a, created.id);
      assert.equal(done.status, path.status);
      assert.equal(done.statusReason, path.reason);
      assert.equal(done.blockingParty, 'NONE');
      for (const [kind, status] of Object.entries(path.legs)) assert.equal(done.legs.find((l: any) => l.kind === kind).status, status, kind);
      assert.equal(done.actual.feeTotal, '0.00', 'fees are given back when nothing was delivered');
      if (path.status === 'RETURNED') assert.equal(done.legs.find((l: any) => l.kind === 'PAYOUT').progressStage, 'RETURNED_BY_BENEFICIARY_BANK');
      await assertHistoryConsistent(t, done);
    });
  }

  // Regression: on a path without a conversion the refund scenario failed the payout and ended
  // FAILED, so .94 could not reach REFUNDED there.
  test('magic amount .94 ends REFUNDED on a path without a conversion too', async () => {
    const wire = { type: 'FIAT', country: 'US', currency: 'USD', method: 'WIRE' };
    const account = await t.request('POST', '/v1/fiat-accounts', {
      apiKey: a.org.apiKey,
      body: {
        entityId: a.entityId,
        rail: { country: 'US', currency: 'USD', method: 'WIRE' },
        details: { routingNumber: '026009593', accountNumber: '123456789' },
        beneficiary: { name: 'Ada Lovelace', type: 'INDIVIDUAL', address: { line1: '1 Main Street', city: 'Springfield', postalCode: '12345', country: 'US' } },
        relationship: 'THIRD_PARTY',
      },
    });
    assert.equal(account.status, 201, account.text);
    const quote = await t.request('POST', '/v1/quotes', {
      apiKey: a.org.apiKey,
      body: { entityId: a.entityId, from: ACH, to: wire, amount: '50.94', fixedSide: 'FROM', destinationFiatAccountId: account.body.id },
    });
    assert.equal(quote.status, 201, quote.text);
    const option = quote.body.options.find((o: any) => o.legs.every((l: any) => l.kind !== 'CONVERSION'));
    assert.ok(option, 'a direct option without a conversion');
    const created = await t.request('POST', '/v1/transfers', {
      apiKey: a.org.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      body: { quoteOptionId: option.id, destination: { type: 'FIAT_ACCOUNT', fiatAccountId: account.body.id }, entityId: a.entityId },
    });
    assert.equal(created.status, 201, created.text);
    await driveToRest(t, a, created.body.id);
    await fund(t, a, created.body.id);
    const done = await driveToRest(t, a, created.body.id);
    assert.equal(done.status, 'REFUNDED');
    assert.equal(done.statusReason, 'payout_failed');
    assert.equal(done.legs.find((l: any) => l.kind === 'PAYOUT').status, 'FAILED');
    assert.equal(done.actual.feeTotal, '0.00', 'fees are given back when nothing was delivered');
    await assertHistoryConsistent(t, done);
  });

  // The request amount is kept at the source asset's precision (USDC: 100.910000); its fraction
  // still reads as .91.
  test('magic amount .91 fails a USDC-funded transfer too', async () => {
    const quote = await t.request('POST', '/v1/quotes', {
      apiKey: a.org.apiKey,
      body: { entityId: a.entityId, from: ETHEREUM_USDC, to: SEPA_DE, amount: '100.91', fixedSide: 'FROM', destinationFiatAccountId: a.fiatAccountId },
    });
    assert.equal(quote.status, 201, quote.text);
    const created = await createTransfer(t, a, quote.body.options[0].id);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.quoted.sourceAmount, '100.910000');
    await driveToRest(t, a, created.body.id);
    await fund(t, a, created.body.id);
    const done = await driveToRest(t, a, created.body.id);
    assert.equal(done.status, 'FAILED');
    assert.equal(done.statusReason, 'payout_failed');
    await assertHistoryConsistent(t, done);
  });

  // Regression: the fund body is optional ({amount?}), but a POST with no body at all was 422.
  test('sandbox fund without any body funds the exact amount', async () => {
    const created = await newTransfer(t, a, '64.00');
    await driveToRest(t, a, created.id);
    const funded = await t.request('POST', `/v1/sandbox/transfers/${created.id}/fund`, { apiKey: a.org.apiKey });
    assert.equal(funded.status, 200, funded.text);
    assert.equal(funded.body.status, 'IN_PROGRESS');
  });

  test('CANCELED: cancel works until the funds arrive, then 409 transfer_not_cancelable', async () => {
    const created = await newTransfer(t, a, '75.00');
    const canceled = await t.request('POST', `/v1/transfers/${created.id}/cancel`, { apiKey: a.org.apiKey });
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.status, 'CANCELED');
    assert.equal(canceled.body.blockingParty, 'NONE');
    assert.equal(canceled.body.statusReason, 'canceled_by_customer');
    assert.ok(canceled.body.legs.every((l: any) => l.status === 'CANCELED'));
    await assertHistoryConsistent(t, canceled.body);
    const twice = await t.request('POST', `/v1/transfers/${created.id}/cancel`, { apiKey: a.org.apiKey });
    assert.equal(twice.status, 409);
    const noFunds = await t.request('POST', `/v1/sandbox/transfers/${created.id}/fund`, { apiKey: a.org.apiKey, body: {} });
    assert.equal(noFunds.status, 409);

    const funded = await newTransfer(t, a, '80.00');
    await driveToRest(t, a, funded.id);
    await fund(t, a, funded.id);
    const late = await t.request('POST', `/v1/transfers/${funded.id}/cancel`, { apiKey: a.org.apiKey });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'transfer_not_cancelable');
  });

  test('CANCELED from AWAITING_FUNDS: the open funding session expires with it and its instructions are gone', async () => {
    const created = await newTransfer(t, a, '85.00');
    await waitFor(t, a, created.id, (tr) => tr.status === 'READY_TO_FUND');
    const session = await t.request('POST', `/v1/transfers/${created.id}/funding-session`, { apiKey: a.org.apiKey });
    assert.equal(session.status, 201, session.text);
    assert.equal((await getTransfer(t, a, created.id)).status, 'AWAITING_FUNDS');
    const canceled = await t.request('POST', `/v1/transfers/${created.id}/cancel`, { apiKey: a.org.apiKey });
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.status, 'CANCELED');
    assert.equal(canceled.body.awaitingFundsInstructions, undefined);
    assert.deepEqual(canceled.body.timeline.at(-1).previousStatus, 'AWAITING_FUNDS');
    const sessions = await t.server.db.kysely.selectFrom('funding_sessions').select('status').where('transfer_id', '=', created.id).execute();
    assert.deepEqual(sessions.map((r: any) => r.status), ['EXPIRED'], 'no funds came: the session expired, it did not complete');
    await assertHistoryConsistent(t, canceled.body);
  });

  test('IN_REVIEW (.93) after funds: ops approval resumes to COMPLETED; rejection refunds', async () => {
    for (const decision of ['approve', 'reject'] as const) {
      const created = await newTransfer(t, a, '300.93');
      await driveToRest(t, a, created.id);
      await fund(t, a, created.id);
      const review = await driveToRest(t, a, created.id);
      assert.equal(review.status, 'IN_REVIEW');
      assert.equal(review.blockingParty, 'SERVICE_OPS');
      const stuck = await t.request('POST', `/v1/sandbox/transfers/${created.id}/advance`, { apiKey: a.org.apiKey });
      assert.equal(stuck.status, 409);
      // The funds are in: the customer can no longer cancel, whatever the review decides.
      const cancel = await t.request('POST', `/v1/transfers/${created.id}/cancel`, { apiKey: a.org.apiKey });
      assert.equal(cancel.status, 409, cancel.text);
      assert.equal(cancel.body.code, 'transfer_not_cancelable');

      const notOps = await t.request('POST', `/v1/ops/transfers/${created.id}/${decision}`, { token: a.org.token, body: {} });
      assert.equal(notOps.status, 403);
      // The operator's reason is recorded when given; otherwise the decision's own.
      const body = decision === 'approve' ? { reason: 'documents_checked' } : {};
      const res = await t.request('POST', `/v1/ops/transfers/${created.id}/${decision}`, { token: opsToken, body });
      assert.equal(res.status, 200, res.text);
      const decided = res.body.timeline.find((e: any) => e.type === 'STATUS' && e.previousStatus === 'IN_REVIEW');
      assert.deepEqual([decided.status, decided.reason], decision === 'approve' ? ['IN_PROGRESS', 'documents_checked'] : ['REFUNDED', 'rejected_by_operations']);
      // An approved transfer resumes on the queue by itself, with nobody calling advance.
      const done = decision === 'approve' ? await waitFor(t, a, created.id, (tr) => TERMINAL.includes(tr.status)) : await getTransfer(t, a, created.id);
      assert.equal(done.status, decision === 'approve' ? 'COMPLETED' : 'REFUNDED');
      assert.equal(done.fundsReceivedAt, review.fundsReceivedAt, 'the funds arrived once, before the review');
      assert.equal(done.actual.sourceAmount, review.actual.sourceAmount);
      assert.equal(done.timeline.filter((e: any) => e.status === 'IN_REVIEW' && e.type === 'STATUS').length, 1, 'reviewed once');
      await assertHistoryConsistent(t, done);
      const again = await t.request('POST', `/v1/ops/transfers/${created.id}/${decision}`, { token: opsToken, body: {} });
      assert.equal(again.status, 409);
    }
  });

  test('ops review queue: IN_REVIEW transfers of every organization, oldest first, until decided', async () => {
    const inReview = async (c: Customer, amount: string) => {
      const created = await newTransfer(t, c, amount);
      await driveToRest(t, c, created.id);
      await fund(t, c, created.id);
      assert.equal((await driveToRest(t, c, created.id)).status, 'IN_REVIEW');
      return created.id as string;
    };
    const first = await inReview(a, '310.93');
    const second = await inReview(b, '320.93');
    const ordinary = await newTransfer(t, a, '330.00');
    const queue = async (query = '') => {
      const res = await t.request('GET', `/v1/ops/transfers${query}`, { token: opsToken });
      assert.equal(res.status, 200, res.text);
      return res.body as { data: any[]; meta: { total: number; nextCursor: string | null } };
    };

    const all = await queue('?limit=100');
    const ids = all.data.map((d) => d.id);
    assert.ok(ids.includes(first) && ids.includes(second), 'both organizations\' transfers are in the queue');
    assert.ok(ids.indexOf(first) < ids.indexOf(second), 'oldest first');
    assert.ok(!ids.includes(ordinary.id));
    assert.ok(all.data.every((d) => d.status === 'IN_REVIEW' && d.blockingParty === 'SERVICE_OPS'));
    const item = all.data.find((d) => d.id === second)!;
    assert.equal(item.organizationId, b.org.organizationId);
    assert.equal(item.timeline, undefined);
    const { organizationId: _org, ...listed } = item;
    const asOwner = await t.request('GET', `/v1/transfers?status=IN_REVIEW&limit=100`, { apiKey: b.org.apiKey });
    assert.deepEqual(listed, asOwner.body.data.find((d: any) => d.id === second), 'the same item the owner lists');

    const onlyB = await queue(`?organizationId=${b.org.organizationId}&limit=100`);
    assert.ok(onlyB.data.length > 0 && onlyB.data.every((d) => d.organizationId === b.org.organizationId));
    const paged = await queue('?limit=1');
    assert.equal(paged.data.length, 1);
    assert.equal(paged.meta.total, all.meta.total);
    assert.ok(paged.meta.nextCursor);
    const next = await queue(`?limit=1&cursor=${encodeURIComponent(paged.meta.nextCursor)}`);
    assert.notEqual(next.data[0].id, paged.data[0].id);
    await waitFor(t, a, ordinary.id, (tr) => tr.status === 'READY_TO_FUND');
    const ready = await queue(`?status=READY_TO_FUND&organizationId=${a.org.organizationId}&limit=100`);
    assert.ok(ready.data.some((d) => d.id === ordinary.id), 'another status on request');
    assert.ok(ready.data.every((d) => d.status === 'READY_TO_FUND' && d.organizationId === a.org.organizationId));

    assert.equal((await t.request('GET', '/v1/ops/transfers', { token: a.org.token })).status, 403, 'a customer user is not an operator');
    assert.equal((await t.request('GET', '/v1/ops/transfers', { apiKey: a.org.apiKey })).status, 403, 'an API key is not an operator');
    const bad = await t.request('GET', '/v1/ops/transfers?status=LOST', { token: opsToken });
    assert.equal(bad.status, 422);

    assert.equal((await t.request('POST', `/v1/ops/transfers/${first}/approve`, { token: opsToken, body: {} })).status, 200);
    assert.ok(!(await queue('?limit=100')).data.some((d) => d.id === first), 'a decided transfer leaves the queue');
  });

  test('the queue executes a funded transfer on its own, at CORRIDOR_SANDBOX_SPEED', async () => {
    const created = await newTransfer(t, a, '42.00', 'CRYPTO');
    await waitFor(t, a, created.id, (tr) => tr.status === 'READY_TO_FUND');
    await fund(t, a, created.id);
    const done = await waitFor(t, a, created.id, (tr) => TERMINAL.includes(tr.status));
    assert.equal(done.status, 'COMPLETED');
    assert.equal(done.destination.type, 'CRYPTO_WALLET');
    await assertHistoryConsistent(t, done);
  });

  test('a funding session moves the transfer to AWAITING_FUNDS with its instructions on the detail; the funds arriving close it', async () => {
    const created = await newTransfer(t, a, '120.00');
    await waitFor(t, a, created.id, (tr) => tr.status === 'READY_TO_FUND');
    const session = await t.request('POST', `/v1/transfers/${created.id}/funding-session`, { apiKey: a.org.apiKey });
    assert.ok([200, 201].includes(session.status), session.text);
    const waiting = await getTransfer(t, a, created.id);
    assert.equal(waiting.status, 'AWAITING_FUNDS');
    assert.equal(waiting.blockingParty, 'CUSTOMER');
    assert.deepEqual(waiting.awaitingFundsInstructions, session.body.instructions);
    assert.equal(waiting.timeline.at(-1).reason, 'funding_session_opened');
    const funded = await fund(t, a, created.id);
    assert.equal(funded.awaitingFundsInstructions, undefined);
    assert.equal(funded.timeline.find((e: any) => e.status === 'IN_PROGRESS').previousStatus, 'AWAITING_FUNDS');
    const closed = await t.server.db.kysely.selectFrom('funding_sessions').select('status').where('transfer_id', '=', created.id).execute();
    assert.deepEqual(closed.map((s: any) => s.status), ['COMPLETED']);
    await assertHistoryConsistent(t, await driveToRest(t, a, created.id));
  });

  test('fund refuses an amount other than the exact one', async () => {
    const created = await newTransfer(t, a, '90.00');
    await driveToRest(t, a, created.id);
    const res = await t.request('POST', `/v1/sandbox/transfers/${created.id}/fund`, { apiKey: a.org.apiKey, body: { amount: '89.99' } });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'funding_amount_mismatch');
    // The quote's rule for amounts: no more fraction digits than the asset has, zeros included.
    for (const amount of ['90.001', '90.000']) {
      const finer = await t.request('POST', `/v1/sandbox/transfers/${created.id}/fund`, { apiKey: a.org.apiKey, body: { amount } });
      assert.equal(finer.status, 422, `${amount}: ${finer.text}`);
      assert.equal(finer.body.code, 'validation_error');
      assert.deepEqual(finer.body.details, [{ path: 'amount', message: 'USD amounts have at most 2 decimal places' }]);
    }
    assert.equal((await getTransfer(t, a, created.id)).status, 'READY_TO_FUND');
    assert.equal((await fund(t, a, created.id, '90.00')).status, 'IN_PROGRESS');
  });

  // Regression: a provider marked DOWN after the quote made advance and fund answer 500 internal_error.
  test('a DOWN provider: advance and fund answer 503 provider_unavailable and change nothing; the transfer moves on once it is back', async () => {
    const { optionId } = await quoteOption(t, a, '66.00');
    const setStatus = async (status: string) => {
      const res = await t.request('PATCH', '/v1/ops/providers/sim-us-ach', { token: opsToken, body: { status } });
      assert.equal(res.status, 200, res.text);
    };
    await setStatus('DOWN');
    try {
      const created = await createTransfer(t, a, optionId);
      assert.equal(created.status, 201, created.text);
      for (const path of ['advance', 'fund']) {
        const res = await t.request('POST', `/v1/sandbox/transfers/${created.body.id}/${path}`, { apiKey: a.org.apiKey });
        assert.equal(res.status, 503, `${path}: ${res.text}`);
        assert.equal(res.body.code, 'provider_unavailable');
        assert.match(res.body.message, /Sandbox ACH \(US\)/);
      }
      const waiting = await getTransfer(t, a, created.body.id);
      assert.deepEqual([waiting.status, waiting.blockingParty, waiting.version], ['PENDING_SETUP', 'PROVIDER', 1]);
      await setStatus('ACTIVE');
      assert.equal((await driveToRest(t, a, created.body.id)).status, 'READY_TO_FUND');
    } finally {
      await setStatus('ACTIVE');
    }
  });

  test('GET /v1/transfers pages with a cursor and filters by status, entity and creation time', async () => {
    const c = await newCustomer(t, 'Lister');
    const other = await newEntity(t, c.org, 'Other');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await newTransfer(t, c, `${10 + i}.00`)).id);
    await t.request('POST', `/v1/transfers/${ids[1]}/cancel`, { apiKey: c.org.apiKey });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await t.request('GET', `/v1/transfers?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { apiKey: c.org.apiKey });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.meta.total, 5);
      assert.ok(res.body.data.length <= 2);
      assert.ok(res.body.data.every((d: any) => !('timeline' in d) && Array.isArray(d.legs)));
      seen.push(...res.body.data.map((d: any) => d.id));
      cursor = res.body.meta.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, ids);
    const canceled = await t.request('GET', '/v1/transfers?status=CANCELED', { apiKey: c.org.apiKey });
    assert.deepEqual(canceled.body.data.map((d: any) => d.id), [ids[1]]);
    const byEntity = await t.request('GET', `/v1/transfers?entityId=${other}`, { apiKey: c.org.apiKey });
    assert.equal(byEntity.body.meta.total, 0);
    const third = await getTransfer(t, c, ids[2]!);
    const window = await t.request('GET', `/v1/transfers?createdFrom=${encodeURIComponent(third.createdAt)}`, { apiKey: c.org.apiKey });
    assert.ok(window.body.data.every((d: any) => d.createdAt >= third.createdAt));
    assert.ok(window.body.data.map((d: any) => d.id).includes(ids[2]));
    const until = await t.request('GET', `/v1/transfers?createdTo=${encodeURIComponent(third.createdAt)}`, { apiKey: c.org.apiKey });
    assert.ok(!until.body.data.map((d: any) => d.id).includes(ids[2]));
    // Bounds finer than a millisecond: a tenth of a microsecond after it created, the transfer is
    // before createdFrom and before createdTo.
    const justAfter = encodeURIComponent(third.createdAt.replace('Z', '0001Z'));
    const fromAfter = await t.request('GET', `/v1/transfers?createdFrom=${justAfter}`, { apiKey: c.org.apiKey });
    assert.equal(fromAfter.status, 200, fromAfter.text);
    assert.ok(!fromAfter.body.data.map((d: any) => d.id).includes(ids[2]));
    const toAfter = await t.request('GET', `/v1/transfers?createdTo=${justAfter}`, { apiKey: c.org.apiKey });
    assert.ok(toAfter.body.data.map((d: any) => d.id).includes(ids[2]));
    const bad = await t.request('GET', '/v1/transfers?cursor=nonsense', { apiKey: c.org.apiKey });
    assert.equal(bad.status, 400);
  });

  test('another organization gets 404 on every transfer endpoint, and cannot use its quote option', async () => {
    const created = await newTransfer(t, a, '60.00');
    const asB = { apiKey: b.org.apiKey };
    for (const [method, url] of [
      ['GET', `/v1/transfers/${created.id}`],
      ['POST', `/v1/transfers/${created.id}/cancel`],
      ['POST', `/v1/sandbox/transfers/${created.id}/fund`],
      ['POST', `/v1/sandbox/transfers/${created.id}/advance`],
      ['GET', '/v1/transfers/not-a-uuid'],
      ['GET', `/v1/transfers/${randomUUID()}`],
    ] as const) {
      const res = await t.request(method, url, { ...asB, ...(method === 'POST' ? { body: {} } : {}) });
      assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
      assert.equal(res.body.code, 'not_found');
    }
    const list = await t.request('GET', '/v1/transfers', asB);
    assert.ok(!list.body.data.some((d: any) => d.id === created.id));
    // A filter naming another organization's entity, or none at all, is 404 like reading it.
    for (const entityId of [a.entityId, randomUUID()]) {
      const filtered = await t.request('GET', `/v1/transfers?entityId=${entityId}`, asB);
      assert.equal(filtered.status, 404, filtered.text);
      assert.deepEqual(filtered.body, { code: 'not_found', message: 'Entity not found' });
    }
    const { optionId } = await quoteOption(t, a, '61.00');
    const stolen = await createTransfer(t, b, optionId);
    assert.equal(stolen.status, 404);
    // B's own option, paid to A's saved destination: the destination is not B's, so 404 (it used
    // to be compared with the option first and answered 422 destination_mismatch).
    const own = await quoteOption(t, b, '62.00');
    for (const to of ['FIAT', 'CRYPTO'] as const) {
      const foreignDestination = await createTransfer(t, b, own.optionId, { extra: { destination: destinationOf(a, to) } });
      assert.equal(foreignDestination.status, 404, foreignDestination.text);
      assert.equal(foreignDestination.body.code, 'not_found');
    }
    assert.equal((await createTransfer(t, b, own.optionId)).status, 201, 'the refusals left the option unused');
    const opsUnknown = await t.request('POST', `/v1/ops/transfers/${randomUUID()}/approve`, { token: opsToken, body: {} });
    assert.equal(opsUnknown.status, 404);
    assert.equal((await getTransfer(t, a, created.id)).status === 'CANCELED', false);
  });

  test('scopes: reading needs transfers:read, writing transfers:write', async () => {
    const key = await t.request('POST', '/v1/api-keys', { token: a.org.token, body: { name: 'reader', scopes: ['transfers:read'] } });
    assert.equal(key.status, 201, key.text);
    const { optionId } = await quoteOption(t, a, '20.00');
    const res = await t.request('POST', '/v1/transfers', {
      apiKey: key.body.secret,
      headers: { 'idempotency-key': randomUUID() },
      body: { quoteOptionId: optionId, destination: { type: 'FIAT_ACCOUNT', fiatAccountId: a.fiatAccountId }, entityId: a.entityId },
    });
    assert.equal(res.status, 403);
    assert.equal((await t.request('GET', '/v1/transfers', { apiKey: key.body.secret })).status, 200);
  });

  test('concurrency: 50 identical requests make one transfer and all answer its id; 50 keys for one option make one transfer', async () => {
    const same = await quoteOption(t, a, '33.00');
    const key = randomUUID();
    const identical = await Promise.all(Array.from({ length: 50 }, () => createTransfer(t, a, same.optionId, { key })));
    assert.ok(identical.every((r) => r.status === 201), identical.map((r) => `${r.status} ${r.body.code ?? ''}`).join(','));
    assert.equal(new Set(identical.map((r) => r.body.id)).size, 1);
    assert.equal(identical.filter((r) => r.headers['idempotent-replayed'] === 'true').length, 49);

    const contested = await quoteOption(t, a, '34.00');
    const racing = await Promise.all(Array.from({ length: 50 }, () => createTransfer(t, a, contested.optionId)));
    const won = racing.filter((r) => r.status === 201);
    assert.equal(won.length, 1, racing.map((r) => `${r.status} ${r.body.code ?? ''}`).join(','));
    assert.ok(racing.filter((r) => r.status !== 201).every((r) => r.status === 409 && r.body.code === 'quote_option_used'));
    for (const optionId of [same.optionId, contested.optionId]) {
      const n = await t.server.db.kysely.selectFrom('transfers').select(sql<string>`count(*)`.as('n')).where('quote_option_id', '=', optionId).executeTakeFirstOrThrow();
      assert.equal(Number(n.n), 1);
    }
  });
});

describe('transfers API surface', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ CORRIDOR_ENV: 'production', CORRIDOR_SIGNUP: 'open' });
  });
  after(async () => t?.close());

  test('production has no sandbox endpoints: fund and advance answer 404', async () => {
    const org = await t.newOrganization('Production');
    for (const action of ['fund', 'advance']) {
      const res = await t.request('POST', `/v1/sandbox/transfers/${randomUUID()}/${action}`, { apiKey: org.apiKey, body: {} });
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.code, 'not_found');
    }
  });

  test('the OpenAPI document gives the transfer its leg kinds, leg statuses and progress stages, and the Idempotency-Key header', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const create = doc.paths['/v1/transfers'].post;
    assert.ok(create.parameters.some((p: any) => p.in === 'header' && p.name === 'idempotency-key'));
    const transfer = create.responses['201'].content['application/json'].schema;
    const leg = transfer.properties.legs.items.properties;
    assert.deepEqual(leg.kind.enum, ['COLLECTION', 'CONVERSION', 'PAYOUT']);
    assert.deepEqual(leg.status.enum, ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'RETURNED', 'CANCELED']);
    for (const stage of ['AWAITING_FUNDS', 'FUNDS_SETTLED', 'ORDER_PLACED', 'CONVERTED_FUNDS_SETTLED', 'PAYOUT_INITIATED', 'DELIVERED_TO_BENEFICIARY', 'RETURNED_BY_BENEFICIARY_BANK']) {
      assert.ok(leg.progressStage.enum.includes(stage), stage);
    }
    assert.match(leg.progressStage.description, /COLLECTION: AWAITING_FUNDS → FUNDS_DETECTED → FUNDS_SETTLED/);
    assert.equal(transfer.properties.progressStage, undefined, 'no top-level progressStage');
    assert.ok(doc.paths['/v1/transfers/{transferId}'].get);
    assert.ok(doc.paths['/v1/ops/transfers/{transferId}/approve'].post);
    assert.equal(doc.paths['/v1/sandbox/transfers/{transferId}/fund'], undefined);
  });
});
