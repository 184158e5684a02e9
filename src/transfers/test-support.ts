// What the transfer tests do again and again, as a client would: an onboarded entity, a saved
// destination, a transfer-ready quote, a transfer, and driving it with the sandbox endpoints.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';

export const ACH = { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' } as const;
export const SEPA_DE = { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' } as const;
export const ETHEREUM_USDC = { type: 'CRYPTO', blockchain: 'ETHEREUM', asset: 'USDC' } as const;

export const TERMINAL = ['COMPLETED', 'FAILED', 'RETURNED', 'REFUNDED', 'CANCELED'];

export interface Customer {
  org: TestOrganization;
  entityId: string;
  fiatAccountId: string;
  walletId: string;
}

export async function newEntity(t: TestServer, org: TestOrganization, lastName = 'Lovelace'): Promise<string> {
  const res = await t.request('POST', '/v1/entities', { apiKey: org.apiKey, body: { type: 'INDIVIDUAL', firstName: 'Ada', lastName, country: 'US' } });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

export async function newFiatAccount(t: TestServer, org: TestOrganization, entityId: string, iban = 'DE89370400440532013000'): Promise<string> {
  const res = await t.request('POST', '/v1/fiat-accounts', {
    apiKey: org.apiKey,
    body: { entityId, rail: { country: 'DE', currency: 'EUR', method: 'SEPA' }, details: { iban }, beneficiary: { name: 'Hans Muster' }, relationship: 'THIRD_PARTY' },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

export async function newWallet(t: TestServer, org: TestOrganization, entityId: string): Promise<string> {
  const res = await t.request('POST', '/v1/crypto-wallets', {
    apiKey: org.apiKey,
    body: { entityId, blockchain: 'ETHEREUM', asset: 'USDC', address: '0x52908400098527886E0F7030069857D2E4169EE7', relationship: 'SELF' },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

export async function newCustomer(t: TestServer, name = 'Transfers'): Promise<Customer> {
  const org = await t.newOrganization(name);
  const entityId = await newEntity(t, org);
  return { org, entityId, fiatAccountId: await newFiatAccount(t, org, entityId), walletId: await newWallet(t, org, entityId) };
}

/** A transfer-ready quote USD ACH → EUR SEPA (or → USDC on Ethereum); answers the cheapest option. */
export async function quoteOption(t: TestServer, c: Customer, amount: string, to: 'FIAT' | 'CRYPTO' = 'FIAT'): Promise<{ optionId: string; option: any; quote: any }> {
  const res = await t.request('POST', '/v1/quotes', {
    apiKey: c.org.apiKey,
    body: {
      entityId: c.entityId,
      from: ACH,
      to: to === 'FIAT' ? SEPA_DE : ETHEREUM_USDC,
      amount,
      fixedSide: 'FROM',
      ...(to === 'FIAT' ? { destinationFiatAccountId: c.fiatAccountId } : { destinationCryptoWalletId: c.walletId }),
    },
  });
  assert.equal(res.status, 201, res.text);
  assert.ok(res.body.options.length > 0, `no option: ${res.text}`);
  return { optionId: res.body.options[0].id, option: res.body.options[0], quote: res.body };
}

export const destinationOf = (c: Customer, to: 'FIAT' | 'CRYPTO' = 'FIAT') =>
  to === 'FIAT' ? { type: 'FIAT_ACCOUNT', fiatAccountId: c.fiatAccountId } : { type: 'CRYPTO_WALLET', cryptoWalletId: c.walletId };

export function createTransfer(t: TestServer, c: Customer, optionId: string, options: { key?: string | null; to?: 'FIAT' | 'CRYPTO'; extra?: Record<string, unknown> } = {}) {
  const key = options.key === undefined ? randomUUID() : options.key;
  return t.request('POST', '/v1/transfers', {
    apiKey: c.org.apiKey,
    headers: key === null ? {} : { 'idempotency-key': key },
    body: { quoteOptionId: optionId, destination: destinationOf(c, options.to), entityId: c.entityId, ...options.extra },
  });
}

/** Quote and create in one go; answers the created transfer. */
export async function newTransfer(t: TestServer, c: Customer, amount: string, to: 'FIAT' | 'CRYPTO' = 'FIAT'): Promise<any> {
  const { optionId } = await quoteOption(t, c, amount, to);
  const res = await createTransfer(t, c, optionId, { to });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

export async function getTransfer(t: TestServer, c: Customer, id: string): Promise<any> {
  const res = await t.request('GET', `/v1/transfers/${id}`, { apiKey: c.org.apiKey });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

export async function fund(t: TestServer, c: Customer, id: string, amount?: string): Promise<any> {
  const res = await t.request('POST', `/v1/sandbox/transfers/${id}/fund`, { apiKey: c.org.apiKey, body: amount ? { amount } : {} });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Calls /advance until the transfer stops needing the engine (terminal, IN_REVIEW, or funding). */
export async function driveToRest(t: TestServer, c: Customer, id: string, maxSteps = 60): Promise<any> {
  let transfer = await getTransfer(t, c, id);
  for (let i = 0; i < maxSteps && (transfer.status === 'PENDING_SETUP' || transfer.status === 'IN_PROGRESS'); i++) {
    const res = await t.request('POST', `/v1/sandbox/transfers/${id}/advance`, { apiKey: c.org.apiKey });
    // The queue may have moved it out of an advanceable status in the meantime.
    if (res.status === 409) transfer = await getTransfer(t, c, id);
    else {
      assert.equal(res.status, 200, res.text);
      transfer = res.body;
    }
  }
  return transfer;
}

/** Bounded polling until the transfer satisfies `done`. */
export async function waitFor(t: TestServer, c: Customer, id: string, done: (transfer: any) => boolean, timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let transfer = await getTransfer(t, c, id);
  while (!done(transfer)) {
    if (Date.now() > deadline) assert.fail(`transfer ${id} did not get there in ${timeoutMs} ms; it is ${transfer.status} v${transfer.version}`);
    await new Promise((r) => setTimeout(r, 100));
    transfer = await getTransfer(t, c, id);
  }
  return transfer;
}

/** The timeline has one item per version, 1..version, in order, and the outbox one event per item. */
export async function assertHistoryConsistent(t: TestServer, transfer: any): Promise<void> {
  // The stored view GET answers with is exactly what the rows say. The engine may move the
  // transfer between the two reads (setup starts as soon as it is created): then both are read
  // again, until they are of one version.
  const owner = await t.server.db.kysely.selectFrom('transfers').select('organization_id').where('id', '=', transfer.id).executeTakeFirstOrThrow();
  let viewed = transfer;
  let fromRows = await t.server.services.transfers.fromTables(owner.organization_id, transfer.id);
  for (let i = 0; i < 50 && fromRows.version !== viewed.version; i++) {
    viewed = await t.server.services.transfers.get(owner.organization_id, transfer.id);
    fromRows = await t.server.services.transfers.fromTables(owner.organization_id, transfer.id);
  }
  const { awaitingFundsInstructions: _instructions, ...shown } = viewed;
  assert.deepEqual(shown, fromRows, 'the stored view and the rows disagree');

  const versions = transfer.timeline.map((e: { version: number }) => e.version);
  assert.deepEqual(versions, Array.from({ length: transfer.version }, (_, i) => i + 1), 'timeline versions are 1..version');
  for (const item of transfer.timeline) assert.equal(typeof item.progressStage === 'string' || item.progressStage === null, true);
  const events = await t.server.db.kysely
    .selectFrom('events')
    .select(['type', 'data'])
    .where(sql<string>`data->>'transferId'`, '=', transfer.id)
    // Events of changes made after this view of the transfer are not its history yet.
    .where(sql<number>`(data->>'version')::int`, '<=', transfer.version)
    .orderBy('sequence')
    .execute();
  assert.deepEqual(
    events.map((e: any) => [e.type, e.data.version]),
    transfer.timeline.map((e: any) => [e.type === 'STATUS' ? 'transfer.status_changed' : 'transfer.leg_status_changed', e.version]),
  );
  for (const [i, e] of events.entries()) {
    const item = transfer.timeline[i];
    assert.equal(e.data.status, item.status);
    assert.equal(e.data.blockingParty, item.blockingParty);
    if (e.type === 'transfer.leg_status_changed') assertLegEvent(transfer, item, e.data.leg);
    else assert.equal(e.data.previousStatus, item.previousStatus);
  }
}

/**
 * A leg event carries the whole leg (DECISIONS.md §5) as it was at its timeline item: the status
 * and stage of that item, the kind and provider of the transfer's leg, its reference once handed
 * to the provider, and the item's time as updatedAt.
 */
export function assertLegEvent(transfer: any, item: any, reported: any): void {
  const leg = transfer.legs[item.leg.position - 1];
  assert.deepEqual(reported, {
    position: item.leg.position,
    kind: leg.kind,
    provider: leg.provider,
    providerReference: reported.providerReference === null ? null : leg.providerReference,
    status: item.leg.status,
    progressStage: item.progressStage,
    updatedAt: item.occurredAt,
  });
  if (item.leg.status !== 'PENDING') assert.equal(reported.providerReference, leg.providerReference);
}
