import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bps, convert, convertInverse, decimalString, divide, fromMinor, normalize, parseClientAmount, precisionOf, toMinor } from './money.ts';

test('precision comes from ISO 4217 and the crypto table', () => {
  assert.equal(precisionOf('USD'), 2);
  assert.equal(precisionOf('JPY'), 0);
  assert.equal(precisionOf('BHD'), 3);
  assert.equal(precisionOf('USDC'), 6);
  assert.equal(precisionOf('BTC'), 8);
  assert.equal(precisionOf('ETH'), 18);
  assert.throws(() => precisionOf('XXQ'));
});

test('decimal strings round-trip through minor units exactly', () => {
  assert.equal(toMinor('100.25', 'USD'), 10025n);
  assert.equal(fromMinor(10025n, 'USD'), '100.25');
  assert.equal(normalize('7', 'EUR'), '7.00');
  assert.equal(normalize('1500', 'JPY'), '1500');
  assert.equal(fromMinor(1n, 'ETH'), '0.000000000000000001');
  assert.equal(toMinor('0.1', 'USD') + toMinor('0.2', 'USD'), toMinor('0.3', 'USD'));
  assert.equal(normalize('1.50', 'JPY'.replace('JPY', 'USD')), '1.50');
  assert.throws(() => toMinor('1.005', 'USD'), /at most 2 decimal places/);
  assert.throws(() => toMinor('1e3', 'USD'));
  assert.equal(toMinor('1.000', 'USD'), 100n, 'trailing zeros beyond precision are harmless');
});

test('a client amount may not have more fraction digits than its asset, not even zeros', () => {
  assert.equal(parseClientAmount('100.25', 'USD'), 10025n);
  assert.equal(parseClientAmount('7', 'EUR'), 700n);
  assert.equal(parseClientAmount('1500', 'JPY'), 1500n);
  assert.equal(parseClientAmount('0.000000000000000001', 'ETH'), 1n);
  assert.throws(() => parseClientAmount('100.000', 'USD'), /USD amounts have at most 2 decimal places/);
  assert.throws(() => parseClientAmount('1500.0', 'JPY'), /JPY amounts are whole numbers/);
  assert.throws(() => parseClientAmount('0.123456789', 'BTC'), /at most 8 decimal places/);
  assert.throws(() => parseClientAmount('1e3', 'USD'), /not a decimal amount/);
});

test('negative amounts keep their sign through parsing, formatting and rates', () => {
  assert.equal(toMinor('-5.25', 'USD'), -525n);
  assert.equal(fromMinor(-525n, 'USD'), '-5.25');
  assert.equal(fromMinor(-5n, 'USD'), '-0.05');
  assert.equal(normalize('-7', 'JPY'), '-7');
  // A negative rate or amount converts to a negative amount; DOWN goes toward minus infinity.
  assert.equal(convert(-100n, 'USD', 'EUR', '0.333', 'DOWN'), -34n);
  assert.equal(convert(100n, 'USD', 'EUR', '-0.5', 'DOWN'), -50n);
});

test('rounding rules are explicit', () => {
  assert.equal(divide(5n, 2n, 'DOWN'), 2n);
  assert.equal(divide(5n, 2n, 'UP'), 3n);
  assert.equal(divide(5n, 2n, 'HALF_EVEN'), 2n);
  assert.equal(divide(7n, 2n, 'HALF_EVEN'), 4n);
  assert.equal(divide(-5n, 2n, 'DOWN'), -3n);
  // UP is toward plus infinity, DOWN toward minus infinity, for either sign of the denominator.
  assert.equal(divide(-5n, 2n, 'UP'), -2n);
  assert.equal(divide(5n, -2n, 'UP'), -2n);
  assert.equal(divide(5n, -2n, 'DOWN'), -3n);
  assert.equal(divide(-5n, -2n, 'UP'), 3n);
  assert.equal(divide(-7n, 2n, 'HALF_EVEN'), -4n);
  assert.equal(divide(-5n, 2n, 'HALF_EVEN'), -2n);
  assert.equal(divide(6n, -3n, 'UP'), -2n);
});

test('conversion at a decimal rate is exact and inverse-consistent', () => {
  // 1,000.00 USD at 0.9123 EUR per USD = 912.30 EUR
  assert.equal(convert(100000n, 'USD', 'EUR', '0.9123', 'DOWN'), 91230n);
  // 100.00 USD to USDC at 1 = 100.000000 USDC
  assert.equal(convert(10000n, 'USD', 'USDC', '1', 'DOWN'), 100000000n);
  // How much USD buys 912.30 EUR at 0.9123: exactly 1,000.00
  assert.equal(convertInverse(91230n, 'USD', 'EUR', '0.9123', 'UP'), 100000n);
  assert.equal(bps(100000n, 25, 'UP'), 250n);
  assert.equal(decimalString(1n, 3n, 6), '0.333333');
});
