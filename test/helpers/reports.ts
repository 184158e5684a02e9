// Client-side helpers for report tests: create, poll until settled, download through the link.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestServer } from './server.ts';

export interface CreatedReport {
  id: string;
  status: string;
  [field: string]: unknown;
}

export async function createReport(t: TestServer, apiKey: string, body: unknown, key: string = randomUUID()): Promise<CreatedReport> {
  const res = await t.request('POST', '/v1/reports', { apiKey, body, headers: { 'idempotency-key': key } });
  assert.equal(res.status, 202, res.text);
  return res.body as CreatedReport;
}

/** Polls GET /v1/reports/{id} until READY or FAILED (bounded by the test timeout, not by a clock assertion). */
export async function settledReport(t: TestServer, apiKey: string, id: string, maxWaitMs = 120_000): Promise<any> {
  const deadline = Date.now() + maxWaitMs;
  for (;;) {
    const res = await t.request('GET', `/v1/reports/${id}`, { apiKey });
    assert.equal(res.status, 200, res.text);
    if (res.body.status !== 'PENDING') return res.body;
    if (Date.now() > deadline) throw new Error(`report ${id} still PENDING after ${maxWaitMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Requests a link and fetches it without credentials; returns the artifact text and headers. */
export async function downloadReport(t: TestServer, apiKey: string, id: string): Promise<{ text: string; contentType: string; url: string }> {
  const link = await t.request('POST', `/v1/reports/${id}/download`, { apiKey });
  assert.equal(link.status, 200, link.text);
  const url = new URL(link.body.url as string);
  const res = await t.request('GET', url.pathname + url.search);
  assert.equal(res.status, 200, res.text);
  return { text: res.text, contentType: String(res.headers['content-type']), url: link.body.url as string };
}

/** Creates a report, waits for it, and returns its settled resource and (when READY) its artifact. */
export async function generateReport(t: TestServer, apiKey: string, body: unknown): Promise<{ report: any; text: string | null }> {
  const created = await createReport(t, apiKey, body);
  const report = await settledReport(t, apiKey, created.id);
  if (report.status !== 'READY') return { report, text: null };
  return { report, text: (await downloadReport(t, apiKey, created.id)).text };
}

/** Parses RFC 4180 CSV (quoted fields, doubled quotes, CRLF records) into rows of cells. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** CSV rows as objects keyed by the header. */
export function csvRecords(text: string): Array<Record<string, string>> {
  const [header, ...rows] = parseCsv(text);
  assert.ok(header, 'the CSV has a header row');
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? ''])));
}
