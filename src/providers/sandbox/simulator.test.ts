import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServer } from '../../../test/helpers/server.ts';
import type { TestServer } from '../../../test/helpers/server.ts';
import { PROGRESS_STAGES, ProviderError, isSimulated } from '../adapter.ts';
import type { LegExecutionRequest, LegKind, LegStatusReport, SimulatedProvider } from '../adapter.ts';
import { loadEnvironmentProviders } from '../configuration.ts';
import { ProviderRegistry } from '../service.ts';

describe('sandbox simulated providers', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  const simulator = (id: string): SimulatedProvider => {
    const p = t.server.services.providers.get(id);
    assert.ok(p && isSimulated(p), `${id} is a simulator`);
    return p;
  };

  const leg = (kind: LegKind, fromAsset: string, toAsset: string, amount: string, extra: Partial<LegExecutionRequest> = {}): LegExecutionRequest => ({
    legId: randomUUID(),
    transferId: randomUUID(),
    kind,
    fromAsset,
    toAsset,
    amount,
    ...extra,
  });

  const advanceUntilTerminal = async (p: SimulatedProvider, ref: string): Promise<LegStatusReport[]> => {
    const seen: LegStatusReport[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await p.advance(ref);
      seen.push(r);
      if (r.status !== 'PROCESSING' && r.status !== 'PENDING') return seen;
    }
    assert.fail(`leg ${ref} never reached a terminal status: ${JSON.stringify(seen)}`);
  };

  test('conversion quotes use exact cross rates from the sandbox table and apply the configured spread', async () => {
    const fx = simulator('sim-fx');
    // EUR→GBP = 0.79 / 0.92 per USD; 30 bps spread rounds against the customer.
    assert.deepEqual(await fx.quoteLeg({ kind: 'CONVERSION', fromAsset: 'EUR', toAsset: 'GBP', amountIn: '100.00' }), {
      midRate: '0.858695652174',
      rate: '0.856119565217',
      fees: { fixed: '0', percentBps: 0, fxSpreadBps: 30 },
      etaSeconds: 60,
    });
    const ars = await fx.quoteLeg({ kind: 'CONVERSION', fromAsset: 'USD', toAsset: 'ARS', amountIn: '10.00' });
    assert.equal(ars.midRate, '870');
    assert.equal(ars.rate, '856.95'); // 870 × (1 − 0.015), exact

    const ramp = simulator('sim-usdc-ramp');
    const gbp = await ramp.quoteLeg({ kind: 'CONVERSION', fromAsset: 'GBP', toAsset: 'USDC', amountIn: '1.00' });
    assert.deepEqual([gbp.midRate, gbp.rate], ['1.26582278481', '1.26329113924']);

    const btc = simulator('sim-bitcoin');
    const toBtc = await btc.quoteLeg({ kind: 'CONVERSION', fromAsset: 'USDC', toAsset: 'BTC', amountIn: '1.000000' });
    assert.deepEqual([toBtc.midRate, toBtc.rate], ['0.0000105', '0.000010458']);
    const fromBtc = await btc.quoteLeg({ kind: 'CONVERSION', fromAsset: 'BTC', toAsset: 'USDC', amountIn: '1.00000000' });
    assert.deepEqual([fromBtc.midRate, fromBtc.rate], ['95238.0952381', '94857.1428571']);

    const eth = await simulator('sim-evm').quoteLeg({ kind: 'CONVERSION', fromAsset: 'USDC', toAsset: 'ETH', amountIn: '1.000000' });
    assert.deepEqual([eth.midRate, eth.rate], ['0.00029', '0.00028884']);
  });

  test('collection and payout quotes carry the configured fees and ETA at rate 1', async () => {
    const sepa = simulator('sim-sepa');
    const q = await sepa.quoteLeg({
      kind: 'PAYOUT',
      fromAsset: 'EUR',
      toAsset: 'EUR',
      amountIn: '250.00',
      rail: { type: 'FIAT', country: 'FR', currency: 'EUR', method: 'SEPA' },
    });
    assert.deepEqual(q, { midRate: '1', rate: '1', fees: { fixed: '0.20', percentBps: 0, fxSpreadBps: 0 }, etaSeconds: 86400 });
    await assert.rejects(
      sepa.quoteLeg({ kind: 'PAYOUT', fromAsset: 'EUR', toAsset: 'EUR', amountIn: '1.00', rail: { type: 'FIAT', country: 'BE', currency: 'EUR', method: 'SEPA' } }),
      (err: unknown) => err instanceof ProviderError && err.code === 'unsupported_leg' && err.providerId === 'sim-sepa',
    );
    await assert.rejects(
      simulator('sim-fx').quoteLeg({ kind: 'CONVERSION', fromAsset: 'NGN', toAsset: 'KES', amountIn: '1.00' }),
      (err: unknown) => err instanceof ProviderError && err.code === 'unsupported_leg',
    );
  });

  test('a payout passes through every stage to COMPLETED, with a customer-safe reference', async () => {
    const ach = simulator('sim-us-ach');
    const rail = { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' } as const;
    const { providerReference, report } = await ach.executeLeg(leg('PAYOUT', 'USD', 'USD', '125.5', { rail, destination: { accountNumber: '000123456789' } }));
    assert.match(providerReference, /^SIM-ACH-[0-9A-F]{16}$/);
    // The hand-off answers the leg's state, the same the provider reports when asked.
    assert.deepEqual(report, { status: 'PROCESSING', progressStage: 'PAYOUT_INITIATED' });
    assert.deepEqual(await ach.legStatus(providerReference), report);

    const steps = await advanceUntilTerminal(ach, providerReference);
    assert.deepEqual(steps, [
      { status: 'PROCESSING', progressStage: 'SENT_TO_RAIL' },
      { status: 'COMPLETED', progressStage: 'DELIVERED_TO_BENEFICIARY', amountOut: '125.50' },
    ]);
    // COMPLETED is terminal: advancing again changes nothing.
    assert.deepEqual(await ach.advance(providerReference), steps[1]);
    assert.deepEqual(await ach.legStatus(providerReference), steps[1]);
  });

  test('collections and conversions walk their own stages; a conversion delivers at the locked rate', async () => {
    const ramp = simulator('sim-usdc-ramp');
    const conversion = await ramp.executeLeg(leg('CONVERSION', 'EUR', 'USDC', '1000.00', { rate: '1.084782' }));
    assert.match(conversion.providerReference, /^SIM-USDC-/);
    const convSteps = await advanceUntilTerminal(ramp, conversion.providerReference);
    assert.deepEqual(
      convSteps.map((s) => s.progressStage),
      PROGRESS_STAGES.CONVERSION.slice(1),
    );
    assert.equal(convSteps.at(-1)!.status, 'COMPLETED');
    assert.equal(convSteps.at(-1)!.amountOut, '1084.782000');

    const evm = simulator('sim-evm');
    const collection = await evm.executeLeg(leg('COLLECTION', 'ETH', 'ETH', '0.5', { rail: { type: 'CRYPTO', blockchain: 'ETHEREUM', asset: 'ETH' } }));
    assert.deepEqual((await evm.legStatus(collection.providerReference)).progressStage, 'AWAITING_FUNDS');
    const collSteps = await advanceUntilTerminal(evm, collection.providerReference);
    assert.deepEqual(collSteps.map((s) => s.progressStage), ['FUNDS_DETECTED', 'FUNDS_SETTLED']);
    assert.equal(collSteps.at(-1)!.amountOut, '0.500000000000000000');
  });

  test('sandboxOutcome FAIL fails a payout on the rail, right after PAYOUT_INITIATED', async () => {
    const pix = simulator('sim-br-pix');
    const { providerReference } = await pix.executeLeg(
      leg('PAYOUT', 'BRL', 'BRL', '50.91', { rail: { type: 'FIAT', country: 'BR', currency: 'BRL', method: 'PIX' }, sandboxOutcome: 'FAIL' }),
    );
    assert.equal((await pix.legStatus(providerReference)).progressStage, 'PAYOUT_INITIATED');
    const steps = await advanceUntilTerminal(pix, providerReference);
    assert.deepEqual(steps, [{ status: 'FAILED', progressStage: 'SENT_TO_RAIL', reason: 'The payment rail rejected the payout' }]);
    assert.deepEqual(await pix.advance(providerReference), steps[0]);
  });

  test('sandboxOutcome RETURN has the beneficiary bank return a payout before it is ever delivered', async () => {
    const sepa = simulator('sim-sepa');
    const { providerReference } = await sepa.executeLeg(
      leg('PAYOUT', 'EUR', 'EUR', '80.92', { rail: { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' }, sandboxOutcome: 'RETURN' }),
    );
    const steps = await advanceUntilTerminal(sepa, providerReference);
    assert.deepEqual(steps, [
      { status: 'PROCESSING', progressStage: 'SENT_TO_RAIL' },
      { status: 'RETURNED', progressStage: 'RETURNED_BY_BENEFICIARY_BANK', reason: "The beneficiary's bank returned the payment" },
    ]);
    assert.ok(!steps.some((s) => s.progressStage === 'DELIVERED_TO_BENEFICIARY'));
  });

  test('sandboxOutcome FAIL on a conversion fails it when the order is placed', async () => {
    const fx = simulator('sim-fx');
    const { providerReference } = await fx.executeLeg(leg('CONVERSION', 'USD', 'EUR', '10.94', { sandboxOutcome: 'FAIL' }));
    assert.deepEqual(await fx.advance(providerReference), { status: 'FAILED', progressStage: 'ORDER_PLACED', reason: 'The conversion order could not be filled' });
  });

  test('executing the same leg twice returns the same reference and the leg\'s current state', async () => {
    const fps = simulator('sim-gb-fps');
    const request = leg('PAYOUT', 'GBP', 'GBP', '10.00', { rail: { type: 'FIAT', country: 'GB', currency: 'GBP', method: 'LOCAL' } });
    const first = await fps.executeLeg(request);
    const advanced = await fps.advance(first.providerReference);
    const second = await fps.executeLeg(request);
    assert.equal(second.providerReference, first.providerReference);
    // A repeated hand-off reports where the leg is now, not where it started.
    assert.equal(first.report.progressStage, 'PAYOUT_INITIATED');
    assert.deepEqual(second.report, advanced);
    assert.notDeepEqual(second.report, first.report);
  });

  test('legs handed over together are each answered as alone: new, handed before, or refused', async () => {
    const fps = simulator('sim-gb-fps');
    const rail = { type: 'FIAT', country: 'GB', currency: 'GBP', method: 'LOCAL' } as const;
    const before = leg('PAYOUT', 'GBP', 'GBP', '10.00', { rail });
    const earlier = await fps.executeLeg(before);
    const advanced = await fps.advance(earlier.providerReference);
    const fresh = leg('PAYOUT', 'GBP', 'GBP', '20.00', { rail });
    const unsupported = leg('PAYOUT', 'EUR', 'EUR', '30.00', { rail: { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' } });
    const [a, b, c] = await fps.executeLegs!([fresh, before, unsupported]);
    assert.ok(!(a instanceof Error) && !(b instanceof Error));
    assert.match(a!.providerReference, /^SIM-/);
    assert.deepEqual(a!.report, { status: 'PROCESSING', progressStage: 'PAYOUT_INITIATED' });
    assert.deepEqual(await fps.legStatus(a!.providerReference), a!.report);
    assert.equal(b!.providerReference, earlier.providerReference);
    assert.deepEqual(b!.report, advanced);
    assert.ok(c instanceof ProviderError && c.code === 'unsupported_leg', JSON.stringify(c));
    // A DOWN provider refuses every leg of the batch.
    const ar = simulator('sim-ar-transferencias');
    const ars = { type: 'FIAT', country: 'AR', currency: 'ARS', method: 'LOCAL' } as const;
    const refused = await ar.executeLegs!([leg('PAYOUT', 'ARS', 'ARS', '1.00', { rail: ars }), leg('PAYOUT', 'ARS', 'ARS', '2.00', { rail: ars })]);
    assert.deepEqual(
      refused.map((r) => r instanceof ProviderError && r.code),
      ['provider_unavailable', 'provider_unavailable'],
    );
  });

  test('a DOWN provider takes no new legs; unknown references are refused', async () => {
    const ar = simulator('sim-ar-transferencias');
    await assert.rejects(
      ar.executeLeg(leg('PAYOUT', 'ARS', 'ARS', '1000.00', { rail: { type: 'FIAT', country: 'AR', currency: 'ARS', method: 'LOCAL' } })),
      (err: unknown) => err instanceof ProviderError && err.code === 'provider_unavailable',
    );
    await assert.rejects(simulator('sim-us-ach').legStatus('SIM-ACH-0000000000000000'), (err: unknown) => err instanceof ProviderError && err.code === 'unknown_reference');
    // A reference belongs to the provider that issued it.
    const { providerReference } = await simulator('sim-stellar').executeLeg(
      leg('PAYOUT', 'USDC', 'USDC', '5', { rail: { type: 'CRYPTO', blockchain: 'STELLAR', asset: 'USDC' } }),
    );
    await assert.rejects(simulator('sim-evm').advance(providerReference), (err: unknown) => err instanceof ProviderError && err.code === 'unknown_reference');
  });

  test('leg state lives in the database: a new registry on the same database resumes where the old one stopped', async () => {
    const wire = simulator('sim-us-wire');
    const rail = { type: 'FIAT', country: 'US', currency: 'USD', method: 'WIRE' } as const;
    const { providerReference } = await wire.executeLeg(leg('PAYOUT', 'USD', 'USD', '5000.00', { rail }));
    await wire.advance(providerReference);

    const restarted = new ProviderRegistry({ db: t.server.db.kysely, file: loadEnvironmentProviders({ env: 'sandbox', providersFile: null }), log: t.server.log });
    const again = restarted.simulator('sim-us-wire')!;
    assert.notEqual(again, wire);
    assert.deepEqual(await again.legStatus(providerReference), { status: 'PROCESSING', progressStage: 'SENT_TO_RAIL' });
    assert.deepEqual(await again.advance(providerReference), { status: 'COMPLETED', progressStage: 'DELIVERED_TO_BENEFICIARY', amountOut: '5000.00' });
    assert.equal((await wire.legStatus(providerReference)).status, 'COMPLETED');
  });
});
