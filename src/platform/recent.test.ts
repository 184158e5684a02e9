import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecentMemory } from './recent.ts';

test('an entry is kept until its time, then forgotten', () => {
  const memory = new RecentMemory<string>({ capacity: 10, ttlMs: 1000 });
  const now = Date.now();
  memory.set('a', 'first', { until: now + 1000 });
  memory.set('b', 'second');
  assert.equal(memory.get('a', now), 'first');
  assert.equal(memory.get('a', now + 999), 'first');
  assert.equal(memory.get('a', now + 1000), undefined);
  assert.equal(memory.size, 1, 'an expired entry read is dropped');
  // Without a time of its own, an entry is kept for the memory's ttlMs.
  assert.equal(memory.get('b', Date.now() + 500), 'second');
  assert.equal(memory.get('b', Date.now() + 60_000), undefined);
});

test('past its capacity the entry set longest ago goes first; setting again makes an entry young', () => {
  const memory = new RecentMemory<number>({ capacity: 3, ttlMs: 60_000 });
  for (const [i, key] of ['a', 'b', 'c'].entries()) memory.set(key, i);
  memory.set('a', 10);
  memory.set('d', 3);
  assert.equal(memory.get('b'), undefined);
  assert.deepEqual(['a', 'c', 'd'].map((k) => memory.get(k)), [10, 2, 3]);
  memory.delete('c');
  assert.equal(memory.get('c'), undefined);
  memory.clear();
  assert.equal(memory.size, 0);
});
