import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { fromMinor, toMinor } from '../platform/money.ts';
import { createTransfer, driveToRest, fund, getTransfer, newCustomer, newTransfer, quoteOption } from '../transfers/test-support.ts';
import type { Customer } from '../transfers/test-support.ts';
import { PROGRESS_STAGES } from '../providers/adapter.ts';
import { ACCOUNTS, UnbalancedEntryError } from './service.ts';

const OPS_EMAIL = 'ledger-ops@corridor.test';
const OPS_PASSWORD = 'operations-password-2';

/** A small seeded generator, so a failing run can be repeated with LEDGER_SEED. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** An entry's postings as sorted [account, currency, minor units] lines (times `sign`). */
const lines = (entry: { postings: Array<{ account: string; currency: string; amount: string }> }, sign = 1n) =>
  entry.postings.map((p) => [p.account, p.currency, sign * toMinor(p.amount, p.currency)] as const).sort((x, y) => `${x[0]}${x[1]}`.localeCompare(`${y[0]}${y[1]}`));

type Path = 'COMPLETED' | 'FAILED' | 'RETURNED' | 'REFUNDED' | 'CANCELED' | 'REVIEW_APPROVED' | 'REVIEW_REJECTED';
const PATHS: Path[] = ['COMPLETED', 'FAILED', 'RETURNED', 'REFUNDED', 'CANCELED', 'REVIEW_APPROVED', 'REVIEW_REJECTED'];
const FRACTION: Record<Path, string | null> = { COMPLETED: null, FAILED: '91', RETURNED: '92', REFUNDED: '94', CANCELED: null, REVIEW_APPROVED: '93', REVIEW_REJECTED: '93' };
const EXPECTED: Record<Path, string> = {
  COMPLETED: 'COMPLETED',
  FAILED: 'FAILED',
  RETURNED: 'RETURNED',
  REFUNDED: 'REFUNDED',
  CANCELED: 'CANCELED',
  REVIEW_APPROVED: 'COMPLETED',
  REVIEW_REJECTED: 'REFUNDED',
};

describe('ledger', () => {
  let t: TestServer;
  let c: Customer;
  let opsToken: string;

  before(async () => {
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '1000', CORRIDOR_OPS_EMAIL: OPS_EMAIL, CORRIDOR_OPS_PASSWORD: OPS_PASSWORD });
    c = await newCustomer(t, 'Ledger');
    opsToken = (await t.request('POST', '/v1/auth/token', { body: { email: OPS_EMAIL, password: OPS_PASSWORD } })).body.accessToken;
  });
  after(async () => t?.close());

  test('an entry that does not balance per currency is refused by the service and by the database', async () => {
    const ledger = t.server.services.ledger;
    const db = t.server.db.kysely;
    await assert.rejects(
      db.transaction().execute((trx) =>
        ledger.post(trx, {
          key: `test:${randomUUID()}`,
          organizationId: c.org.organizationId,
          transferId: null,
          kind: 'FEE',
          description: 'unbalanced',
          postings: [
            { account: ACCOUNTS.CUSTOMER_FUNDS_HELD, currency: 'USD', amount: -100n },
            { account: ACCOUNTS.FEE_REVENUE, currency: 'EUR', amount: 100n },
          ],
        }),
      ),
      UnbalancedEntryError,
    );
    // Bypassing the service: the deferred constraint trigger refuses the commit.
    const entryId = randomUUID();
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('ledger_entries').values({ id: entryId, entry_key: `raw:${entryId}`, organization_id: c.org.organizationId, transfer_id: null, kind: 'FEE', description: 'raw' }).execute();
        await trx.insertInto('ledger_postings').values({ id: randomUUID(), entry_id: entryId, organization_id: c.org.organizationId, transfer_id: null, account: 'FEE_REVENUE', currency: 'USD', amount: '1.00' }).execute();
      }),
      /does not balance/,
    );
    // Posting the same movement twice adds nothing the second time.
    const key = `test:${randomUUID()}`;
    const entry = {
      key,
      organizationId: c.org.organizationId,
      transferId: null,
      kind: 'FEE' as const,
      description: 'twice',
      postings: [
        { account: ACCOUNTS.CUSTOMER_FUNDS_HELD, currency: 'USD', amount: -5n },
        { account: ACCOUNTS.FEE_REVENUE, currency: 'USD', amount: 5n },
      ],
    };
    assert.equal(await db.transaction().execute((trx) => ledger.post(trx, entry)), true);
    assert.equal(await db.transaction().execute((trx) => ledger.post(trx, entry)), false);
    await db.transaction().execute((trx) => ledger.post(trx, { ...entry, key: `${key}:undo`, postings: entry.postings.map((p) => ({ ...p, amount: -p.amount })) }));
  });

  test('randomized transfers through every terminal path: every currency nets to zero, nothing stays held, completed postings equal the quote', async () => {
    const seed = Number(process.env.LEDGER_SEED ?? Date.now() % 1_000_000);
    const random = prng(seed);
    const count = Number(process.env.LEDGER_TRANSFERS ?? 28);
    const plans = Array.from({ length: count }, (_, i) => {
      const path = PATHS[i % PATHS.length]!;
      let cents = FRACTION[path];
      if (!cents) do cents = String(Math.floor(random() * 100)).padStart(2, '0'); while (['91', '92', '93', '94'].includes(cents));
      return { path, amount: `${20 + Math.floor(random() * 5000)}.${cents}`, to: random() < 0.35 ? ('CRYPTO' as const) : ('FIAT' as const) };
    });

    const results: Array<{ plan: (typeof plans)[number]; transfer: any }> = [];
    // A few at a time, so the queue and the sandbox endpoints interleave as they would in use.
    for (let i = 0; i < plans.length; i += 4) {
      results.push(
        ...(await Promise.all(
          plans.slice(i, i + 4).map(async (plan) => {
            const created = await newTransfer(t, c, plan.amount, plan.to);
            if (plan.path === 'CANCELED') {
              const res = await t.request('POST', `/v1/transfers/${created.id}/cancel`, { apiKey: c.org.apiKey });
              assert.equal(res.status, 200, res.text);
              return { plan, transfer: res.body };
            }
            await driveToRest(t, c, created.id);
            await fund(t, c, created.id);
            let transfer = await driveToRest(t, c, created.id);
            if (plan.path.startsWith('REVIEW')) {
              assert.equal(transfer.status, 'IN_REVIEW');
              const decision = plan.path === 'REVIEW_APPROVED' ? 'approve' : 'reject';
              const res = await t.request('POST', `/v1/ops/transfers/${created.id}/${decision}`, { token: opsToken, body: {} });
              assert.equal(res.status, 200, res.text);
              transfer = await driveToRest(t, c, created.id);
            }
            return { plan, transfer };
          }),
        )),
      );
    }

    for (const { plan, transfer } of results) assert.equal(transfer.status, EXPECTED[plan.path], `seed ${seed}: ${plan.amount} (${plan.path})`);

    // The trial balance: across all accounts each currency sums to zero.
    const balances = await t.server.services.ledger.balances();
    const perCurrency = new Map<string, bigint>();
    for (const b of balances) perCurrency.set(b.currency, (perCurrency.get(b.currency) ?? 0n) + b.balance);
    for (const [currency, sum] of perCurrency) assert.equal(sum, 0n, `seed ${seed}: ${currency} does not net to zero`);

    for (const { plan, transfer } of results) {
      const label = `seed ${seed}: ${plan.amount} (${plan.path})`;
      const own = await t.server.services.ledger.transferBalances(transfer.id);
      const of = (account: string, currency: string) => own.find((b) => b.account === account && b.currency === currency)?.balance ?? 0n;
      // Every transfer ended: nothing of it is held or in transit any more.
      for (const b of own) {
        if (b.account === ACCOUNTS.CUSTOMER_FUNDS_HELD || b.account === ACCOUNTS.PAYOUT_IN_TRANSIT) assert.equal(b.balance, 0n, `${label}: ${b.account} ${b.currency}`);
      }
      const final = await getTransfer(t, c, transfer.id);
      if (final.status === 'CANCELED') {
        assert.equal(own.length, 0, `${label}: a transfer canceled before funding posts nothing`);
        continue;
      }
      const entries = await t.server.services.ledger.entries(transfer.id);
      const fundsIn = entries.find((e) => e.kind === 'FUNDS_IN')!;
      assert.ok(fundsIn, label);
      const source = final.sourceAsset;
      assert.deepEqual(
        fundsIn.postings.map((p) => [p.account, p.currency, toMinor(p.amount.replace('-', ''), p.currency)]).sort(),
        [[ACCOUNTS.CUSTOMER_EXTERNAL, source, toMinor(final.quoted.sourceAmount, source)], [ACCOUNTS.CUSTOMER_FUNDS_HELD, source, toMinor(final.quoted.sourceAmount, source)]].sort(),
        label,
      );
      if (final.status === 'COMPLETED') {
        const option = await t.server.services.quotes.getOptionForTransfer(c.org.organizationId, final.quoteOptionId);
        assert.equal(of(ACCOUNTS.BENEFICIARY_EXTERNAL, final.destinationAsset), toMinor(final.quoted.destinationAmount, final.destinationAsset), `${label}: delivered`);
        assert.equal(of(ACCOUNTS.CUSTOMER_EXTERNAL, source), -toMinor(final.quoted.sourceAmount, source), `${label}: paid`);
        const fees = new Map<string, bigint>();
        for (const f of option.fees) fees.set(f.currency, (fees.get(f.currency) ?? 0n) + toMinor(f.amount, f.currency));
        for (const [currency, amount] of fees) assert.equal(of(ACCOUNTS.FEE_REVENUE, currency), amount, `${label}: fees in ${currency}`);
        assert.equal(own.filter((b) => b.account === ACCOUNTS.FEE_REVENUE).length, fees.size, `${label}: no other fee`);
        if ([...fees.keys()].every((cur) => cur === final.quoted.feeCurrency)) {
          assert.equal(of(ACCOUNTS.FEE_REVENUE, final.quoted.feeCurrency), toMinor(final.quoted.feeTotal, final.quoted.feeCurrency), `${label}: fee total`);
        }
        assert.equal(final.actual.destinationAmount, final.quoted.destinationAmount, label);
      } else {
        // Nothing delivered: fees reversed, and the customer got back everything that was held.
        for (const b of own) if (b.account === ACCOUNTS.FEE_REVENUE) assert.equal(b.balance, 0n, `${label}: fee kept`);
        assert.equal(of(ACCOUNTS.BENEFICIARY_EXTERNAL, final.destinationAsset), 0n, label);
        const giveBack = entries.find((e) => e.kind === (final.status === 'REFUNDED' ? 'REFUND' : 'RETURN_TO_CUSTOMER'));
        assert.ok(giveBack, label);
        // A payout handed to the rail comes back from it first: the customer is paid from what
        // is held, never straight out of transit.
        const sent = entries.find((e) => e.kind === 'PAYOUT_SENT');
        if (final.status === 'RETURNED') assert.ok(sent, `${label}: a returned payout was in flight`);
        if (sent) {
          const returned = entries.find((e) => e.kind === 'PAYOUT_RETURNED');
          assert.ok(returned, `${label}: the payout came back from the rail`);
          assert.deepEqual(lines(returned), lines(sent, -1n), `${label}: what came back is what was sent`);
        }
        assert.ok(giveBack.postings.every((p) => p.account !== ACCOUNTS.PAYOUT_IN_TRANSIT), `${label}: ${giveBack.postings.map((p) => p.account).join(", ")}`);
      }
    }
  });
});

// Regression: a payout a provider reports COMPLETED straight from PENDING (the simulators always
// pass through PROCESSING; a real rail may not) posted PAYOUT_SETTLED without PAYOUT_SENT, so
// PAYOUT_IN_TRANSIT went negative and the funds stayed held.
describe('ledger: a payout settled without being reported in flight', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '0.01' });
  });
  after(async () => t?.close());

  test('still passes through transit: nothing held or in transit, the beneficiary has the quoted amount', async () => {
    const c = await newCustomer(t, 'Direct settle');
    const created = await newTransfer(t, c, '250.00');
    await driveToRest(t, c, created.id);
    let transfer = await fund(t, c, created.id);
    const payout = () => transfer.legs.find((l: any) => l.kind === 'PAYOUT');
    for (let i = 0; i < 20 && transfer.legs.some((l: any) => l.kind !== 'PAYOUT' && l.status !== 'COMPLETED'); i++) {
      const res = await t.request('POST', `/v1/sandbox/transfers/${created.id}/advance`, { apiKey: c.org.apiKey });
      assert.equal(res.status, 200, res.text);
      transfer = res.body;
    }
    assert.equal(payout().status, 'PENDING', JSON.stringify(transfer.legs));

    const { transfers } = t.server.services;
    await t.server.db.kysely.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('transfers').selectAll().where('id', '=', created.id).forUpdate().executeTakeFirstOrThrow();
      const leg = await trx.selectFrom('transfer_legs').selectAll().where('transfer_id', '=', created.id).where('position', '=', payout().position).executeTakeFirstOrThrow();
      await transfers.changeLeg(trx, row as any, leg as any, { status: 'COMPLETED', progressStage: PROGRESS_STAGES.PAYOUT.at(-1)! });
    });

    const own = await t.server.services.ledger.transferBalances(created.id);
    for (const b of own) {
      if (b.account === ACCOUNTS.CUSTOMER_FUNDS_HELD || b.account === ACCOUNTS.PAYOUT_IN_TRANSIT) assert.equal(b.balance, 0n, `${b.account} ${b.currency}`);
    }
    const delivered = own.find((b) => b.account === ACCOUNTS.BENEFICIARY_EXTERNAL && b.currency === transfer.destinationAsset)?.balance;
    assert.equal(delivered, toMinor(transfer.quoted.destinationAmount, transfer.destinationAsset));
    const kinds = (await t.server.services.ledger.entries(created.id)).map((e) => e.kind);
    assert.deepEqual(kinds.slice(-2), ['PAYOUT_SENT', 'PAYOUT_SETTLED']);
  });
});

// The sandbox's conversions charge no fee of their own (their price is in the spread), so the
// transfers above never post one. Here the FX provider charges one, as a real one may.
describe('ledger: a conversion that charges its own fee', () => {
  let t: TestServer;
  let dir: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-ledger-'));
    const file = path.join(dir, 'providers.json');
    const config = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../config/providers.sandbox.json'), 'utf8'));
    for (const provider of config.providers) {
      for (const c of provider.capabilities) if (c.kind === 'CONVERSION') c.fees = { ...c.fees, fixed: '1', percentBps: 25 };
    }
    fs.writeFileSync(file, JSON.stringify(config));
    t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '0.01', CORRIDOR_PROVIDERS_FILE: file });
  });
  after(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the fee goes to FEE_REVENUE and only the rest is converted', async () => {
    const c = await newCustomer(t, 'Conversion fee');
    const { option, optionId } = await quoteOption(t, c, '800.00');
    const created = await createTransfer(t, c, optionId);
    assert.equal(created.status, 201, created.text);
    await driveToRest(t, c, created.body.id);
    await fund(t, c, created.body.id);
    const done = await driveToRest(t, c, created.body.id);
    assert.equal(done.status, 'COMPLETED');

    const entries = await t.server.services.ledger.entries(done.id);
    const conversions = done.legs.filter((l: any) => l.kind === 'CONVERSION');
    assert.ok(conversions.length > 0, JSON.stringify(done.legs));
    for (const conversion of conversions) {
      const { fromAsset: from, toAsset: to } = conversion;
      const fee = option.fees.find((f: any) => f.legPosition === conversion.position);
      assert.ok(fee && toMinor(fee.amount, from) > 0n, JSON.stringify(option.fees));
      const entry = entries.find((e) => e.entry_key === `${done.id}:CONVERSION:${conversion.position}`);
      assert.ok(entry, `conversion leg ${conversion.position}`);
      assert.deepEqual(
        lines(entry),
        lines({
          postings: [
            { account: ACCOUNTS.CUSTOMER_FUNDS_HELD, currency: from, amount: `-${conversion.quotedAmountIn}` },
            { account: ACCOUNTS.FEE_REVENUE, currency: from, amount: fee.amount },
            { account: ACCOUNTS.FX_CLEARING, currency: from, amount: fromMinor(toMinor(conversion.quotedAmountIn, from) - toMinor(fee.amount, from), from) },
            { account: ACCOUNTS.FX_CLEARING, currency: to, amount: `-${conversion.quotedAmountOut}` },
            { account: ACCOUNTS.CUSTOMER_FUNDS_HELD, currency: to, amount: conversion.quotedAmountOut },
          ],
        }),
      );
    }
    // Every fee of the option is revenue, per currency, the conversions' included.
    const own = await t.server.services.ledger.transferBalances(done.id);
    const expected = new Map<string, bigint>();
    for (const f of option.fees) expected.set(f.currency, (expected.get(f.currency) ?? 0n) + toMinor(f.amount, f.currency));
    for (const [currency, amount] of expected) assert.equal(own.find((b) => b.account === ACCOUNTS.FEE_REVENUE && b.currency === currency)?.balance, amount, currency);
  });
});
