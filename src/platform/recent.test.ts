import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecentMemory } from './recent.ts';

test('an entry is kept until its time, then forgotten', () => {
  const memory = new RecentMemory<string>({ capacity: 10, ttlMs: 1000 });
  memory.set('a', 'first');
  memory.set('b', 'second', { until: Date.now() + 60_000 });
  assert.equal(memory.get('a'), 'first');
  assert.equal(memory.get('a', Date.now() + 999), 'first');
  assert.equal(memory.get('a', Date.now() + 1001), undefined);
  assert.equal(memory.size, 1, 'an expired entry read is dropped');
  assert.equal(memory.get('b', Date.now() + 30_000), 'second');
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
