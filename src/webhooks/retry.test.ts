import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_RETRY_AFTER_SECONDS, RETRY_LIMIT, backoffSeconds, parseRetryAfter, retryDelayMs } from './retry.ts';
import { signingSecrets } from './service.ts';

describe('webhook retry schedule', () => {
  test('the first retry comes within 10 seconds whatever the jitter, and later ones back off', () => {
    const now = new Date();
    for (const random of [() => 0, () => 0.5, () => 0.999999]) {
      assert.ok(retryDelayMs(1, { now, random }) <= 10_000);
      assert.ok(retryDelayMs(1, { now, random }) >= 1_000);
    }
    for (let n = 2; n <= RETRY_LIMIT; n++) assert.ok(backoffSeconds(n) >= backoffSeconds(n - 1), `retry ${n}`);
    assert.ok(backoffSeconds(3) > backoffSeconds(2) * 2, 'exponential at first');
  });

  test('all retries together span about three days', () => {
    const now = new Date();
    const total = (random: () => number) => Array.from({ length: RETRY_LIMIT }, (_, i) => retryDelayMs(i + 1, { now, random })).reduce((a, b) => a + b, 0);
    const day = 86_400_000;
    assert.ok(total(() => 0.5) > 3 * day && total(() => 0.5) < 3.5 * day, `nominal ${total(() => 0.5) / day} days`);
    assert.ok(total(() => 0) > 2.5 * day, `shortest ${total(() => 0) / day} days`);
    assert.ok(total(() => 0.999999) < 4 * day, `longest ${total(() => 0.999999) / day} days`);
  });

  test('jitter spreads retries of the same step', () => {
    const now = new Date();
    const delays = new Set(Array.from({ length: 20 }, () => retryDelayMs(4, { now })));
    assert.ok(delays.size > 10);
  });

  test('Retry-After in seconds or as an HTTP date pushes the retry later, never earlier, at most 10 s on the first retry and 12 hours after', () => {
    const now = new Date('2026-01-01T00:00:00.000Z');
    const fixed = { now, random: () => 0.5 };
    assert.equal(parseRetryAfter('120', now), 120);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:05:00 GMT', now), 300);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('soon', now), null);
    assert.equal(parseRetryAfter(null, now), null);

    assert.equal(retryDelayMs(1, { ...fixed, retryAfter: '8' }), 8_000);
    assert.equal(retryDelayMs(2, { ...fixed, retryAfter: '120' }), 120_000);
    assert.equal(retryDelayMs(2, { ...fixed, retryAfter: 'Thu, 01 Jan 2026 00:05:00 GMT' }), 300_000);
    // A Retry-After shorter than the backoff does not hurry the retry.
    assert.equal(retryDelayMs(8, { ...fixed, retryAfter: '1' }), backoffSeconds(8) * 1000);
    assert.equal(retryDelayMs(2, { ...fixed, retryAfter: '99999999' }), MAX_RETRY_AFTER_SECONDS * 1000);
    // The documented ceiling (OpenAPI: "pushes the next attempt later, up to 12 h").
    assert.equal(retryDelayMs(2, { ...fixed, retryAfter: '99999999' }), 12 * 3600 * 1000);
    // The first retry still comes within 10 s (DECISIONS.md §10), whatever the receiver asked.
    assert.equal(retryDelayMs(1, { ...fixed, retryAfter: '120' }), 10_000);
    assert.equal(retryDelayMs(1, { ...fixed, retryAfter: 'Thu, 01 Jan 2026 00:05:00 GMT' }), 10_000);
    assert.equal(retryDelayMs(1, { ...fixed, retryAfter: '99999999' }), 10_000);
  });

  test('the test-only scale shrinks the backoff but not a Retry-After', () => {
    const fixed = { now: new Date(), random: () => 0.5 };
    assert.equal(retryDelayMs(1, { ...fixed, scale: 0.001 }), 5);
    assert.equal(retryDelayMs(1, { ...fixed, scale: 0.001, retryAfter: '2' }), 2000);
  });
});

describe('secret rotation overlap', () => {
  test('the replaced secret signs next to the new one until the overlap ends, then not at all', () => {
    const endpoint = { secret: 'whsec_new', previous_secret: 'whsec_old', previous_secret_expires_at: new Date('2026-01-02T00:00:00Z') };
    assert.deepEqual(signingSecrets(endpoint, new Date('2026-01-01T23:59:59Z')), ['whsec_new', 'whsec_old']);
    assert.deepEqual(signingSecrets(endpoint, new Date('2026-01-02T00:00:00Z')), ['whsec_new']);
    assert.deepEqual(signingSecrets({ ...endpoint, previous_secret: null, previous_secret_expires_at: null }, new Date('2026-01-01T00:00:00Z')), ['whsec_new']);
  });
});
