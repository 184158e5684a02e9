import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Batcher, allInOrder, lookupBatcher } from './batch.ts';

/** A run function that records each batch it gets and answers when told to. */
function recorder<I, O>(answer: (item: I) => O) {
  const batches: I[][] = [];
  const gates: Array<() => void> = [];
  const run = async (items: I[]) => {
    batches.push(items);
    await new Promise<void>((resolve) => gates.push(resolve));
    return items.map(answer);
  };
  const release = async () => {
    while (!gates.length) await new Promise((r) => setImmediate(r));
    gates.shift()!();
  };
  return { batches, run, release };
}

describe('Batcher', () => {
  test('callers of one turn of the event loop share one batch', async () => {
    const r = recorder((n: number) => n * 2);
    const batcher = new Batcher(r.run);
    const results = Promise.all([1, 2, 3].map((n) => batcher.submit(n)));
    await r.release();
    assert.deepEqual(await results, [2, 4, 6]);
    assert.deepEqual(r.batches, [[1, 2, 3]]);
  });

  test('callers arriving while a batch is in flight go together in the next one', async () => {
    const r = recorder((n: number) => n + 100);
    const batcher = new Batcher(r.run);
    const first = batcher.submit(1);
    while (!r.batches.length) await new Promise((resolve) => setImmediate(resolve));
    const later = [batcher.submit(2), batcher.submit(3)];
    await new Promise((resolve) => setImmediate(resolve));
    const fourth = batcher.submit(4);
    assert.equal(r.batches.length, 1, 'nothing else is sent while the first batch runs');
    await r.release();
    assert.equal(await first, 101);
    await r.release();
    assert.deepEqual(await Promise.all([...later, fourth]), [102, 103, 104]);
    assert.deepEqual(r.batches, [[1], [2, 3, 4]]);
  });

  test('with a window, callers of several turns of the event loop within it share one batch', async () => {
    const r = recorder((n: number) => n);
    const batcher = new Batcher(r.run, { windowMs: 30 });
    const first = batcher.submit(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = batcher.submit(2);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(r.batches.length, 0, 'nothing is sent before the window closes');
    await r.release();
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    assert.deepEqual(r.batches, [[1, 2]]);
  });

  test('a batch is never larger than maxSize, and concurrency bounds the batches in flight', async () => {
    const r = recorder((n: number) => n);
    const batcher = new Batcher(r.run, { maxSize: 2, concurrency: 2 });
    const all = Promise.all([1, 2, 3, 4, 5].map((n) => batcher.submit(n)));
    while (r.batches.length < 2) await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(r.batches, [[1, 2], [3, 4]], 'two batches in flight, the fifth item waits');
    await r.release();
    await r.release();
    await r.release();
    assert.deepEqual(await all, [1, 2, 3, 4, 5]);
    assert.deepEqual(r.batches[2], [5]);
  });

  test('when a batch fails, each item runs alone and only the failing one is rejected', async () => {
    const batches: number[][] = [];
    const batcher = new Batcher<number, string>(async (items) => {
      batches.push(items);
      if (items.includes(13)) throw new Error('thirteen');
      return items.map((n) => `ok ${n}`);
    });
    const outcomes = await Promise.allSettled([12, 13, 14].map((n) => batcher.submit(n)));
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
      ['ok 12', 'thirteen', 'ok 14'],
    );
    assert.deepEqual(batches[0], [12, 13, 14]);
    assert.deepEqual(batches.slice(1).sort(), [[12], [13], [14]]);
  });

  test('a run that answers the wrong number of results fails every caller', async () => {
    const batcher = new Batcher<number, number>(async () => [1]);
    const outcomes = await Promise.allSettled([1, 2].map((n) => batcher.submit(n)));
    assert.ok(outcomes.every((o) => o.status === 'rejected' && /answered 1 results/.test((o.reason as Error).message)));
  });

  test('lookupBatcher fetches each distinct key once and answers each caller its own row', async () => {
    const fetched: string[][] = [];
    const lookup = lookupBatcher(
      async (keys: string[]) => {
        fetched.push(keys);
        return keys.filter((k) => k !== 'missing').map((k) => ({ key: k, value: k.toUpperCase() }));
      },
      (k) => k,
      (row) => row.key,
    );
    const rows = await Promise.all(['a', 'b', 'a', 'missing'].map((k) => lookup.submit(k)));
    assert.deepEqual(rows, [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }, { key: 'a', value: 'A' }, undefined]);
    assert.deepEqual(fetched, [['a', 'b', 'missing']]);
  });
});

describe('allInOrder', () => {
  test('answers every value, or the first error in the order given', async () => {
    assert.deepEqual(await allInOrder([Promise.resolve(1), Promise.resolve('two')] as const), [1, 'two']);
    const slowFirst = new Promise<number>((_, reject) => setTimeout(() => reject(new Error('first')), 20));
    await assert.rejects(allInOrder([slowFirst, Promise.reject(new Error('second'))] as const), /first/);
  });
});
