import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fromMinor, toMinor } from '../platform/money.ts';
import type { Capability, FeeSchedule, Rail } from '../providers/adapter.ts';
import { legFee, optionRate, priceBackward, priceForward, smallestInputLeaving } from './pricing.ts';
import type { LegPricingInput, PricedPath } from './pricing.ts';
import { searchPaths } from './paths.ts';
import type { NetworkProvider } from './paths.ts';

const fees = (fixed: string, percentBps = 0, fxSpreadBps = 0): FeeSchedule => ({ fixed, percentBps, fxSpreadBps });
const ach = { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' } as const;
const sepa = { type: 'FIAT', country: 'DE', currency: 'EUR', method: 'SEPA' } as const;

const collect = (asset: string, f: FeeSchedule): LegPricingInput => ({
  kind: 'COLLECTION', providerId: 'c', provider: 'Collector', fromAsset: asset, toAsset: asset, fees: f, midRate: '1', rate: '1', etaSeconds: 100,
});
const convertLeg = (from: string, to: string, midRate: string, rate: string, f: FeeSchedule = fees('0')): LegPricingInput => ({
  kind: 'CONVERSION', providerId: 'x', provider: 'Converter', fromAsset: from, toAsset: to, fees: f, midRate, rate, etaSeconds: 10,
});
const payout = (asset: string, f: FeeSchedule): LegPricingInput => ({
  kind: 'PAYOUT', providerId: 'p', provider: 'Payer', fromAsset: asset, toAsset: asset, fees: f, midRate: '1', rate: '1', etaSeconds: 1000,
});

const priced = (p: PricedPath | { unpriceable: string }): PricedPath => {
  assert.ok(!('unpriceable' in p), 'the path should price');
  return p;
};

describe('quote pricing (exact, minor units)', () => {
  test('USD ACH → EUR SEPA, fixedSide FROM 100.00: every figure checked by hand', () => {
    // Collection 0.25 USD; conversion at 0.92 × (1 − 30/10,000) = 0.91724; payout 0.20 EUR.
    const legs = [collect('USD', fees('0.25')), convertLeg('USD', 'EUR', '0.92', '0.91724'), payout('EUR', fees('0.20'))];
    const p = priced(priceForward(legs, toMinor('100.00', 'USD')));
    // 100.00 − 0.25 = 99.75 USD; 99.75 × 0.91724 = 91.494690 → DOWN 91.49 EUR; 91.49 − 0.20 = 91.29 EUR.
    assert.deepEqual(
      p.legs.map((l) => [l.kind, fromMinor(l.amountIn, l.fromAsset), fromMinor(l.fee, l.fromAsset), fromMinor(l.amountOut, l.toAsset)]),
      [
        ['COLLECTION', '100.00', '0.25', '99.75'],
        ['CONVERSION', '99.75', '0.00', '91.49'],
        ['PAYOUT', '91.49', '0.20', '91.29'],
      ],
    );
    assert.equal(fromMinor(p.fromAmount, 'USD'), '100.00');
    assert.equal(fromMinor(p.toAmount, 'EUR'), '91.29');
    assert.deepEqual(p.fees, [
      { type: 'COLLECTION_FEE', amount: '0.25', currency: 'USD', legPosition: 1 },
      { type: 'PAYOUT_FEE', amount: '0.20', currency: 'EUR', legPosition: 3 },
    ]);
    // 0.20 EUR ÷ 0.92 = 0.21739… USD → UP 0.22; 0.25 + 0.22 = 0.47 USD.
    assert.equal(fromMinor(p.totalFee, 'USD'), '0.47');
    assert.equal(p.rate, '0.9129');
    assert.equal(p.etaSeconds, 1110);
    // Each leg hands on exactly what it received minus its fee (or that, converted).
    for (const [i, leg] of p.legs.entries()) {
      if (leg.kind !== 'CONVERSION') assert.equal(leg.amountOut, leg.amountIn - leg.fee);
      if (i > 0) assert.equal(leg.amountIn, p.legs[i - 1]!.amountOut);
    }
  });

  test('totalFee converts each fee back at the mid rate, not at the provider\'s rate after its spread', () => {
    // Mid 0.5 EUR per USD, applied at 0.4 (a wide spread); the payout charges 1.00 EUR.
    const legs = [collect('USD', fees('0')), convertLeg('USD', 'EUR', '0.5', '0.4'), payout('EUR', fees('1.00'))];
    const p = priced(priceForward(legs, toMinor('100.00', 'USD')));
    // 100.00 USD × 0.4 = 40.00 EUR; − 1.00 = 39.00 EUR.
    assert.equal(fromMinor(p.toAmount, 'EUR'), '39.00');
    // The spread is inside the rate, not a fee: 1.00 EUR ÷ 0.5 = 2.00 USD (÷ 0.4 would say 2.50).
    assert.equal(fromMinor(p.totalFee, 'USD'), '2.00');
    assert.deepEqual(p.fees, [{ type: 'PAYOUT_FEE', amount: '1.00', currency: 'EUR', legPosition: 3 }]);
  });

  test('fees round UP and conversions round DOWN', () => {
    // 25 bps of 100.01 = 0.250025 → 0.26 (UP), plus the fixed 0.10.
    assert.equal(legFee(toMinor('100.01', 'USD'), fees('0.10', 25), 'USD'), toMinor('0.36', 'USD'));
    // 1.00 USD at 0.999 USDC = 0.999000 USDC exactly; 0.01 USD at 0.3333 EUR = 0.003333 → 0.00 EUR, so unpriceable.
    const p = priced(priceForward([collect('USD', fees('0')), convertLeg('USD', 'USDC', '1', '0.999'), payout('USDC', fees('0'))], 100n));
    assert.equal(fromMinor(p.toAmount, 'USDC'), '0.999000');
    assert.deepEqual(priceForward([collect('USD', fees('0')), convertLeg('USD', 'EUR', '0.3333', '0.3333')], 1n), { unpriceable: 'amount_below_fees' });
    // A fee that takes the whole amount leaves nothing to send.
    assert.deepEqual(priceForward([collect('USD', fees('0.25'))], 25n), { unpriceable: 'amount_below_fees' });
  });

  test('fixedSide TO delivers exactly the requested amount, and one minor unit less in would not', () => {
    const legs = [collect('USD', fees('0.25', 15)), convertLeg('USD', 'USDC', '1', '0.999'), convertLeg('USDC', 'EUR', '0.92', '0.91816', fees('0', 5)), payout('EUR', fees('0.20', 10))];
    const target = toMinor('500.00', 'EUR');
    const p = priced(priceBackward(legs, target));
    assert.equal(p.toAmount, target);
    assert.equal(p.legs.length, 4);
    for (const [i, leg] of p.legs.entries()) {
      assert.equal(leg.fee, legFee(leg.amountIn, legs[i]!.fees, leg.fromAsset), `leg ${leg.position} fee follows its schedule`);
      if (i < p.legs.length - 1) assert.equal(p.legs[i + 1]!.amountIn, leg.amountOut);
    }
    const forward = priced(priceForward(legs, p.fromAmount));
    assert.ok(forward.toAmount >= target, 'sending fromAmount delivers at least the target');
    const less = priceForward(legs, p.fromAmount - 1n);
    assert.ok('unpriceable' in less || less.toAmount < target, 'one minor unit less falls short: fromAmount is the least that works');
  });

  test('backward pricing is the least input for many amounts and schedules (seeded)', () => {
    let seed = 42;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 300; round++) {
      const legs = [
        collect('USD', fees(`${next(3)}.${String(next(100)).padStart(2, '0')}`, next(80))),
        convertLeg('USD', 'MXN', '17.1', `17.${String(next(1000)).padStart(3, '0')}`, fees('0', next(40))),
        payout('MXN', fees(`${next(10)}.00`, next(50))),
      ];
      const target = BigInt(1 + next(5_000_000));
      const p = priced(priceBackward(legs, target));
      assert.equal(p.toAmount, target);
      assert.ok(priced(priceForward(legs, p.fromAmount)).toAmount >= target);
      const less = priceForward(legs, p.fromAmount - 1n);
      assert.ok('unpriceable' in less || less.toAmount < target, `round ${round}: ${p.fromAmount} is not minimal`);
    }
  });

  test('the fee solver leaves exactly the net amount after the fee', () => {
    for (const net of [1n, 99n, 10_000n, 123_457n]) {
      const input = smallestInputLeaving(net, fees('0.30', 290), 'USD')!;
      assert.equal(input - legFee(input, fees('0.30', 290), 'USD'), net);
      assert.ok(input - 1n - legFee(input - 1n, fees('0.30', 290), 'USD') < net);
    }
    assert.equal(smallestInputLeaving(100n, fees('0', 10_000), 'USD'), null);
  });

  test('option rate is toAmount ÷ fromAmount, exact or cut down to 12 significant digits', () => {
    assert.equal(optionRate(10_000n, 'USD', 9_129n, 'EUR'), '0.9129');
    assert.equal(optionRate(300n, 'USD', 100n, 'USD'), '0.333333333333');
    // Cut DOWN, never rounded to nearest: 2 ÷ 3 is not 0.666666666667.
    assert.equal(optionRate(300n, 'USD', 200n, 'USD'), '0.666666666666');
    assert.equal(optionRate(10_000n, 'USD', 104_076n, 'BTC'), '0.0000104076');
    assert.equal(optionRate(100n, 'USD', 15_412_525n, 'NGN'), '154125.25');
  });
});

describe('path search', () => {
  const provider = (id: string, availability: 'ACTIVE' | 'DEGRADED' | 'DOWN', capabilities: Capability[]): NetworkProvider => ({
    id,
    displayName: id.toUpperCase(),
    capabilities: () => capabilities,
    availability: () => availability,
  });
  const rail = (kind: 'COLLECTION' | 'PAYOUT', r: Rail): Capability => ({ kind, rail: r, fees: fees('0'), etaSeconds: 1 });
  const conv = (from: string, to: string): Capability => ({ kind: 'CONVERSION', from, to, fees: fees('0'), etaSeconds: 1 });

  test('direct and bridged conversions, DOWN providers skipped', () => {
    const network = [
      provider('ach', 'ACTIVE', [rail('COLLECTION', ach)]),
      provider('sepa', 'DEGRADED', [rail('PAYOUT', sepa)]),
      provider('fx', 'ACTIVE', [conv('USD', 'EUR')]),
      provider('ramp', 'ACTIVE', [conv('USD', 'USDC'), conv('USDC', 'EUR')]),
      provider('fx-down', 'DOWN', [conv('USD', 'EUR')]),
    ];
    const { paths, gaps } = searchPaths(ach, sepa, network);
    assert.deepEqual(gaps, []);
    assert.deepEqual(
      paths.map((p) => p.map((l) => `${l.kind}:${l.provider.id}:${l.fromAsset}>${l.toAsset}`).join(' ')),
      [
        'COLLECTION:ach:USD>USD CONVERSION:fx:USD>EUR PAYOUT:sepa:EUR>EUR',
        'COLLECTION:ach:USD>USD CONVERSION:ramp:USD>USDC CONVERSION:ramp:USDC>EUR PAYOUT:sepa:EUR>EUR',
      ],
    );
    assert.equal(paths[0]![2]!.availability, 'DEGRADED');
  });

  test('gaps name what is missing', () => {
    const down = searchPaths(ach, sepa, [provider('ach', 'ACTIVE', [rail('COLLECTION', ach)]), provider('sepa', 'DOWN', [rail('PAYOUT', sepa)]), provider('fx', 'ACTIVE', [conv('USD', 'EUR')])]);
    assert.deepEqual(down.paths, []);
    assert.deepEqual(down.gaps, [{ code: 'no_active_provider', stage: 'PAYOUT', rail: sepa }]);
    const noConversion = searchPaths(ach, sepa, [provider('ach', 'ACTIVE', [rail('COLLECTION', ach)]), provider('sepa', 'ACTIVE', [rail('PAYOUT', sepa)])]);
    assert.deepEqual(noConversion.gaps, [{ code: 'no_conversion_path', fromAsset: 'USD', toAsset: 'EUR' }]);
    // Every converter of the pair DOWN is no_active_provider too, whether the pair is direct or a bridge.
    const payers = [provider('ach', 'ACTIVE', [rail('COLLECTION', ach)]), provider('sepa', 'ACTIVE', [rail('PAYOUT', sepa)])];
    const conversionDown = { code: 'no_active_provider', stage: 'CONVERSION', fromAsset: 'USD', toAsset: 'EUR' };
    const directDown = searchPaths(ach, sepa, [...payers, provider('fx', 'DOWN', [conv('USD', 'EUR')])]);
    assert.deepEqual([directDown.paths, directDown.gaps], [[], [conversionDown]]);
    const bridgeDown = searchPaths(ach, sepa, [...payers, provider('on', 'ACTIVE', [conv('USD', 'USDC')]), provider('off', 'DOWN', [conv('USDC', 'EUR')])]);
    assert.deepEqual([bridgeDown.paths, bridgeDown.gaps], [[], [conversionDown]]);
    const sameAsset = searchPaths(ach, ach, [provider('ach', 'ACTIVE', [rail('COLLECTION', ach), rail('PAYOUT', ach)])]);
    assert.equal(sameAsset.paths.length, 1);
    assert.deepEqual(sameAsset.paths[0]!.map((l) => l.kind), ['COLLECTION', 'PAYOUT']);
  });
});
