// CSV output shared by the CSV profiles: RFC 4180 (comma, double-quote escaping, CRLF records,
// header row) written by csv-stringify's synchronous API, then one write per page.
//
// Why not the streaming API record by record: measured on a million status-history rows, the
// synchronous API on slices of a hundred records costs about a third less CPU (1.2 s against
// 1.8 s). A slice keeps the strings the library builds short-lived, so they die young instead of
// being copied by the garbage collector (whole pages of 2000 records in one call cost more than
// the stream), and a page then reaches the hash and the file as one buffer. The bytes are the
// streaming API's: the header comes with the first records, or alone when there are none.
//
// csv-stringify is pinned at 6.7.0. 6.8 added a check for separators fused across a cell's end
// (for multi-character delimiters) that allocates an array and a concatenated copy of every
// cell; measured on a million status-history rows in six alternating runs, 6.9.0 cost the whole
// generator 17% more CPU (5.6 s against 4.7 s). With a one-character delimiter, and the cast
// below quoting every cell that holds a CR or LF, both versions write the same bytes.
//
// Line breaks: with an explicit record delimiter, csv-stringify quotes only cells that contain
// that delimiter (CRLF), so a lone LF or CR would reach the file bare and split the record in
// Excel and in most parsers. Its quote_record_delimiter option fixes that but cost a third more
// CPU (it builds an array per cell); a cast that asks for quotes on the rare cell with a CR or LF
// costs nothing measurable.
//
// Formula injection: csv-stringify's escape_formulas prefixes a single quote to any cell that
// starts with =, +, -, @, tab or CR (and their full-width forms), so a spreadsheet shows the text
// instead of evaluating it. The rule applies to every cell; amounts in these profiles are never
// negative, so no number is ever altered.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import { assertRowLimit } from './profile.ts';
import type { GenerationContext } from './profile.ts';

export type CsvCell = string | number | null;

/** csv-stringify cast: have the library quote (and escape) a cell that holds a line break. */
const quoteLineBreaks = (value: string) => (value.indexOf('\n') === -1 && value.indexOf('\r') === -1 ? value : { value, quoted: true });

/** Records per csv-stringify call: large enough to spread its per-call setup, small enough to stay young. */
const SLICE = 100;

export async function writeCsv(ctx: GenerationContext, out: Writable, columns: string[], pages: AsyncIterable<CsvCell[][]>): Promise<number> {
  // Records may carry fields past the last column (a paging key); columns leaves them out.
  const format = (records: CsvCell[][], header: boolean) =>
    Buffer.from(stringify(records, { columns, header, record_delimiter: '\r\n', escape_formulas: true, cast: { string: quoteLineBreaks } }), 'utf8');
  const write = async (chunk: Buffer) => {
    if (!out.write(chunk)) await once(out, 'drain');
  };
  let rows = 0;
  let headerDue = true;
  for await (const page of pages) {
    rows += page.length;
    assertRowLimit(ctx, rows);
    const chunks: Buffer[] = [];
    for (let i = 0; i < page.length; i += SLICE) {
      chunks.push(format(page.slice(i, i + SLICE), headerDue));
      headerDue = false;
    }
    if (chunks.length) await write(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    await ctx.progress(rows);
  }
  if (headerDue) await write(format([], true));
  out.end();
  await once(out, 'finish');
  return rows;
}

/** "FIAT:US:USD:ACH" or "CRYPTO:POLYGON:USDC". */
export function railLabel(rail: Record<string, unknown> | null | undefined): string | null {
  if (!rail) return null;
  if (rail.type === 'FIAT') return `FIAT:${String(rail.country)}:${String(rail.currency)}:${String(rail.method)}`;
  if (rail.type === 'CRYPTO') return `CRYPTO:${String(rail.blockchain)}:${String(rail.asset)}`;
  return null;
}

/** DECISIONS.md §3: a transfer to the customer's own account is an own-account transfer. */
export const classification = (relationship: string): string => (relationship === 'SELF' ? 'OWN_ACCOUNT_TRANSFER' : 'BENEFICIARY_PAYMENT');
