import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isUuid, newId } from './ids.ts';

test('newId makes UUIDv7s: the time in their first 48 bits, sortable, and never the same twice', () => {
  const at = Date.parse('2026-11-25T12:00:00.000Z');
  const id = newId(at);
  assert.ok(isUuid(id), id);
  assert.equal(id[14], '7', 'version 7');
  assert.match(id[19]!, /[89ab]/, 'RFC 9562 variant');
  assert.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), at, 'the millisecond it was made');
  const later = newId(at + 1);
  assert.ok(later > id, 'an id made later sorts after');
  const many = new Set(Array.from({ length: 10_000 }, () => newId(at)));
  assert.equal(many.size, 10_000, 'ids of one millisecond still differ (74 random bits)');
});
