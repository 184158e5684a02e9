// The CSV writer on its own: exact bytes for the cases the profiles' data rarely reaches.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { writeCsv } from './profiles/csv.ts';
import type { CsvCell } from './profiles/csv.ts';
import type { GenerationContext } from './profiles/profile.ts';
import { parseCsv } from '../../test/helpers/reports.ts';

async function csvOf(columns: string[], pages: CsvCell[][][], maxOutputRows = 100): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const ctx = { maxOutputRows, progress: async () => {} } as unknown as GenerationContext;
  async function* source() {
    yield* pages;
  }
  await writeCsv(ctx, out, columns, source());
  return Buffer.concat(chunks).toString('utf8');
}

test('a report without records is its header alone, CRLF-terminated', async () => {
  assert.equal(await csvOf(['a', 'b'], []), 'a,b\r\n');
  assert.equal(await csvOf(['a', 'b'], [[]]), 'a,b\r\n');
});

test('RFC 4180 quoting: commas, quotes and line breaks, a lone LF or CR included; empty cells for null', async () => {
  const text = await csvOf(['a', 'b', 'c'], [[['x,y', 'say "hi"', null]], [['line\r\nbreak', 'lf\nonly', 'cr\ronly']], [[7, 'plain', '']]]);
  assert.equal(text, 'a,b,c\r\n"x,y","say ""hi""",\r\n"line\r\nbreak","lf\nonly","cr\ronly"\r\n7,plain,\r\n');
});

test('formula triggers, full-width ones included, get a leading quote; a sign inside a cell is left alone', async () => {
  const cells = ['=1+1', '+1', '-1', '@A1', '\tx', '\rx', '\uFF1D1', '\uFF0B1', '\uFF0D1', '\uFF20A1'];
  const text = await csvOf(cells.map((_, i) => `c${i}`), [[cells], [['a-b', '1+1', 'x=y', 'a@b', ...cells.slice(4)]]]);
  const [, first, second] = parseCsv(text);
  assert.deepEqual(first, cells.map((c) => `'${c}`));
  assert.deepEqual(second!.slice(0, 4), ['a-b', '1+1', 'x=y', 'a@b']);
});

test('the row limit is enforced as pages arrive', async () => {
  await assert.rejects(csvOf(['a'], [[['1'], ['2']], [['3']]], 2), { code: 'report_limit_exceeded' });
});
