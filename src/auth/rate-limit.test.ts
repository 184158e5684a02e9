// The per-credential window behind 429 rate_limited (DECISIONS.md §2), driven with explicit clock
// readings so the minute boundary is tested exactly, without waiting for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RateLimiter } from './rate-limit.ts';

const START = 1_800_000_000_000;

test('a credential gets `limit` requests per minute, counted down in remaining, then is limited until the window ends', () => {
  const limiter = new RateLimiter(3);
  const verdicts = [0, 1_000, 2_000, 3_000].map((ms) => limiter.take('key:a', START + ms)!);
  assert.deepEqual(verdicts.map((v) => v.limited), [false, false, false, true]);
  assert.deepEqual(verdicts.map((v) => v.remaining), [2, 1, 0, 0]);
  assert.deepEqual(verdicts.map((v) => v.limit), [3, 3, 3, 3]);
  assert.deepEqual(verdicts.map((v) => v.resetSeconds), [60, 59, 58, 57]);

  const lastMoment = limiter.take('key:a', START + 59_999)!;
  assert.equal(lastMoment.limited, true, 'still the same minute');
  assert.equal(lastMoment.resetSeconds, 1);

  const nextMinute = limiter.take('key:a', START + 60_000)!;
  assert.equal(nextMinute.limited, false, 'a new window starts after a minute');
  assert.equal(nextMinute.remaining, 2);
  assert.equal(nextMinute.resetSeconds, 60);
});

test('each credential has its own window, and a limit of 0 turns limiting off', () => {
  const limiter = new RateLimiter(1);
  assert.equal(limiter.take('key:a', START)!.limited, false);
  assert.equal(limiter.take('key:a', START + 1)!.limited, true);
  assert.equal(limiter.take('user:b', START + 2)!.limited, false);
  assert.equal(new RateLimiter(0).take('key:a', START), null);
});
