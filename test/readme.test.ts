// The README is what a newcomer follows, so it must not drift from the code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { README, withCurrentTable } from '../scripts/config-table.ts';
import { SETTINGS } from '../src/platform/config.ts';

const readme = fs.readFileSync(README, 'utf8');

test("the README's configuration table is the one SETTINGS generates (fix: node scripts/config-table.ts --write)", () => {
  assert.equal(readme, withCurrentTable(readme));
  for (const s of SETTINGS) assert.ok(readme.includes(`| \`${s.name}\` |`), s.name);
});

test('the README gives exactly the two commands of the issue', () => {
  assert.ok(readme.includes('npm ci && npm start'));
  assert.ok(readme.includes('npm ci && npm test'));
});
