// The three CSV profiles end to end: real server, real queue, rows written into the transfer
// tables, reports created over the API and downloaded through their signed links.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { csvRecords, generateReport, parseCsv } from '../../test/helpers/reports.ts';
import { insertTransfers, NEVER_EXPORTED, POLYGON_USDC, USD_ACH } from '../../test/fixtures/report-data.ts';

const FROM = '2026-03-01T00:00:00.000Z';
const TO = '2026-03-02T00:00:00.000Z';

let t: TestServer;
let org: TestOrganization;
let A: string, B: string, C: string, D: string;
const exports: string[] = [];

async function csv(body: Record<string, unknown>): Promise<{ text: string; rows: Array<Record<string, string>>; report: any }> {
  const { report, text } = await generateReport(t, org.apiKey, body);
  assert.equal(report.status, 'READY', JSON.stringify(report));
  exports.push(text!);
  return { text: text!, rows: csvRecords(text!), report };
}

before(async () => {
  t = await startTestServer({ CORRIDOR_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-reports-')), CORRIDOR_REPORT_PAGE_SIZE: '3' });
  org = await t.newOrganization('Reports CSV');
  const other = await t.newOrganization('Someone else');
  const db = t.server.db.kysely;
  const created = await insertTransfers(db, org.organizationId, [
    {
      createdAt: '2026-03-01T01:00:00.000Z',
      relationship: 'SELF',
      clientReference: 'INV, "quoted"',
      actualSourceAmount: '1000.00',
      actualDestinationAmount: '17240.55',
      actualFeeTotal: '3.80',
      events: [
        { status: 'PENDING_SETUP', at: '2026-03-01T01:00:00.000Z' },
        { status: 'READY_TO_FUND', at: '2026-03-01T01:01:00.000Z' },
        { status: 'AWAITING_FUNDS', at: '2026-03-01T01:05:00.000Z' },
        { status: 'IN_PROGRESS', at: '2026-03-01T02:00:00.000Z' },
        { status: 'COMPLETED', at: '2026-03-01T03:00:00.000Z' },
      ],
    },
    {
      createdAt: '2026-02-28T23:00:00.000Z',
      events: [
        { status: 'PENDING_SETUP', at: '2026-02-28T23:00:00.000Z' },
        { status: 'READY_TO_FUND', at: '2026-02-28T23:01:00.000Z' },
        { status: 'AWAITING_FUNDS', at: '2026-03-01T05:00:00.000Z' },
        { status: 'IN_REVIEW', at: '2026-03-01T06:00:00.000Z', reason: 'Compliance check' },
        { status: 'IN_PROGRESS', at: '2026-03-02T01:00:00.000Z' },
      ],
    },
    {
      createdAt: TO,
      events: [{ status: 'PENDING_SETUP', at: TO }],
    },
    {
      createdAt: FROM,
      toRail: POLYGON_USDC,
      clientReference: '=HYPERLINK("http://evil.example","click")',
      legs: [
        { kind: 'COLLECTION', providerName: 'Sandbox ACH', providerReference: '-2+3', fromAsset: 'USD', toAsset: 'USD', rail: USD_ACH },
        { kind: 'CONVERSION', providerName: 'Sandbox FX', providerReference: null, fromAsset: 'USD', toAsset: 'USDC' },
        { kind: 'PAYOUT', providerName: 'Sandbox Polygon', providerReference: '@SUM(1)', fromAsset: 'USDC', toAsset: 'USDC', rail: POLYGON_USDC },
      ],
      events: [
        { status: 'PENDING_SETUP', at: FROM },
        { status: 'READY_TO_FUND', at: '2026-03-01T00:00:01.000Z' },
        { status: 'CANCELED', at: '2026-03-01T04:00:00.000Z', reason: '\tcanceled by +customer' },
      ],
    },
  ]);
  [A, B, C, D] = created as [string, string, string, string];
  await insertTransfers(db, other.organizationId, [{ createdAt: '2026-03-01T12:00:00.000Z', clientReference: 'OTHER-ORG', events: [{ status: 'PENDING_SETUP', at: '2026-03-01T12:00:00.000Z' }] }]);
});

after(async () => {
  await t?.close();
});

describe('TRANSFER_ACTIVITY SUMMARY (csv.transfer_activity.summary.v1)', () => {
  test('CREATED_AT: one row per transfer created in the half-open window, with both amount sets, classification and ordered providers', async () => {
    const { rows, report, text } = await csv({ type: 'TRANSFER_ACTIVITY', format: 'CSV', detailLevel: 'SUMMARY', filters: { from: FROM, to: TO } });
    assert.equal(report.profileVersion, 'csv.transfer_activity.summary.v1');
    assert.equal(report.schemaVersion, 'service.report.v1');
    assert.equal(report.artifact.rowCount, 2);
    assert.deepEqual(parseCsv(text)[0], [
      'transferId', 'createdAt', 'updatedAt', 'status', 'blockingParty', 'statusReason', 'classification', 'clientReference', 'entityId',
      'sourceRail', 'destinationRail', 'sourceAsset', 'destinationAsset',
      'quotedSourceAmount', 'quotedDestinationAmount', 'quotedRate', 'actualSourceAmount', 'actualDestinationAmount',
      'providerNames', 'providerReferences', 'originalMessageId', 'originalEndToEndId',
    ]);
    // The transfer created exactly at `from` is in; the one created exactly at `to` is not; the other organization's never.
    assert.deepEqual(rows.map((r) => r.transferId), [D, A]);
    const a = rows[1]!;
    assert.equal(a.createdAt, '2026-03-01T01:00:00.000Z');
    assert.equal(a.status, 'COMPLETED');
    assert.equal(a.blockingParty, 'NONE');
    assert.equal(a.classification, 'OWN_ACCOUNT_TRANSFER');
    assert.equal(a.clientReference, 'INV, "quoted"');
    assert.equal(a.sourceRail, 'FIAT:US:USD:ACH');
    assert.equal(a.destinationRail, 'FIAT:MX:MXN:SPEI');
    assert.equal(a.quotedSourceAmount, '1000.00');
    assert.equal(a.quotedDestinationAmount, '17250.00');
    assert.equal(a.actualSourceAmount, '1000.00');
    assert.equal(a.actualDestinationAmount, '17240.55');
    const suffix = A.slice(0, 8).toUpperCase();
    assert.equal(a.providerNames, 'Sandbox ACH|Sandbox FX|Sandbox SPEI');
    assert.equal(a.providerReferences, `ACH-${suffix}|FX-${suffix}|SPEI-${suffix}`);
    const d = rows[0]!;
    assert.equal(d.classification, 'BENEFICIARY_PAYMENT');
    assert.equal(d.destinationRail, 'CRYPTO:POLYGON:USDC');
    assert.equal(d.actualDestinationAmount, '', 'an amount not known yet is empty, not zero');
    // A leg without a reference keeps its place, so names and references line up.
    assert.equal(d.providerNames, 'Sandbox ACH|Sandbox FX|Sandbox Polygon');
  });

  // Regression: the window's ends were truncated to the millisecond, so a `from` a fraction after
  // a transfer still took it in, and a `to` a fraction after one still left it out.
  test('window ends finer than a millisecond keep the window half-open', async () => {
    const finer = (at: string) => at.replace('Z', '0001Z');
    const { rows, report } = await csv({ type: 'TRANSFER_ACTIVITY', format: 'CSV', detailLevel: 'SUMMARY', filters: { from: finer(FROM), to: finer(TO) } });
    // D was created exactly at FROM, before the new start; C exactly at TO, before the new end.
    assert.deepEqual(rows.map((r) => r.transferId), [A, C]);
    assert.equal(report.filters.from, '2026-03-01T00:00:00.001Z');
    assert.equal(report.filters.to, '2026-03-02T00:00:00.001Z');
  });

  test('includeFees adds the fee columns', async () => {
    const { rows, text } = await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO, includeFees: true } });
    const header = parseCsv(text)[0]!;
    assert.deepEqual(header.slice(18, 21), ['feeCurrency', 'quotedFeeTotal', 'actualFeeTotal']);
    const a = rows.find((r) => r.transferId === A)!;
    assert.equal(a.feeCurrency, 'USD');
    assert.equal(a.quotedFeeTotal, '3.75');
    assert.equal(a.actualFeeTotal, '3.80');
  });

  test('STATUS_EVENT_AT: transfers with a status event in the window; status, reason, blocking party and updatedAt from the latest one inside it', async () => {
    const { rows } = await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO, timestampBasis: 'STATUS_EVENT_AT' } });
    assert.deepEqual(rows.map((r) => r.transferId), [B, D, A], 'ordered by creation; C has no event inside the window');
    assert.ok(!rows.some((r) => r.transferId === C));
    const b = rows[0]!;
    // B is IN_PROGRESS now, but its latest event inside the window moved it to IN_REVIEW.
    assert.equal(b.status, 'IN_REVIEW');
    assert.equal(b.statusReason, 'Compliance check');
    assert.equal(b.blockingParty, 'SERVICE_OPS');
    assert.equal(b.updatedAt, '2026-03-01T06:00:00.000Z');
    assert.equal(rows[2]!.status, 'COMPLETED');
    assert.equal(rows[2]!.updatedAt, '2026-03-01T03:00:00.000Z');
  });

  test('STATUS_EVENT_AT with statuses selects on the latest in-window status', async () => {
    const { rows } = await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO, timestampBasis: 'STATUS_EVENT_AT', statuses: ['IN_REVIEW', 'CANCELED'] } });
    assert.deepEqual(rows.map((r) => r.transferId), [B, D]);
  });

  test('assetScope FIAT and CRYPTO split by the destination rail', async () => {
    const fiat = await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO, assetScope: 'FIAT' } });
    assert.deepEqual(fiat.rows.map((r) => r.transferId), [A]);
    const crypto = await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO, assetScope: 'CRYPTO' } });
    assert.deepEqual(crypto.rows.map((r) => r.transferId), [D]);
  });
});

describe('TRANSFER_ACTIVITY EXECUTION_PATH (csv.transfer_activity.execution_path.v1)', () => {
  test('one row per provider leg, in leg order', async () => {
    const { rows, report, text } = await csv({ type: 'TRANSFER_ACTIVITY', detailLevel: 'EXECUTION_PATH', filters: { from: FROM, to: TO } });
    assert.equal(report.profileVersion, 'csv.transfer_activity.execution_path.v1');
    assert.deepEqual(parseCsv(text)[0], [
      'transferId', 'transferCreatedAt', 'transferStatus', 'classification', 'clientReference',
      'legPosition', 'legKind', 'providerName', 'providerReference', 'legStatus', 'progressStage',
      'legFromAsset', 'legToAsset', 'legRail', 'quotedAmountIn', 'quotedAmountOut', 'actualAmountOut', 'legUpdatedAt',
    ]);
    assert.equal(rows.length, 6);
    assert.equal(report.artifact.rowCount, 6);
    assert.deepEqual(rows.map((r) => [r.transferId, r.legPosition, r.legKind]), [
      [D, '1', 'COLLECTION'], [D, '2', 'CONVERSION'], [D, '3', 'PAYOUT'],
      [A, '1', 'COLLECTION'], [A, '2', 'CONVERSION'], [A, '3', 'PAYOUT'],
    ]);
    const payout = rows[5]!;
    assert.equal(payout.providerName, 'Sandbox SPEI');
    assert.equal(payout.providerReference, `SPEI-${A.slice(0, 8).toUpperCase()}`);
    assert.equal(payout.progressStage, 'DELIVERED_TO_BENEFICIARY');
    assert.equal(payout.legRail, 'FIAT:MX:MXN:SPEI');
    assert.equal(rows[1]!.providerReference, '', 'a leg without a provider reference');
  });

  test('includeFees adds the transfer fee columns to each leg row', async () => {
    const { text } = await csv({ type: 'TRANSFER_ACTIVITY', detailLevel: 'EXECUTION_PATH', filters: { from: FROM, to: TO, includeFees: true } });
    assert.deepEqual(parseCsv(text)[0]!.slice(-3), ['transferFeeCurrency', 'transferQuotedFeeTotal', 'transferActualFeeTotal']);
  });
});

describe('TRANSFER_STATUS_HISTORY SUMMARY (csv.transfer_status_history.summary.v1)', () => {
  test('one row per status transition in the half-open window, oldest first, across page boundaries', async () => {
    const { rows, report, text } = await csv({ type: 'TRANSFER_STATUS_HISTORY', filters: { from: FROM, to: TO, timestampBasis: 'STATUS_EVENT_AT' } });
    assert.equal(report.profileVersion, 'csv.transfer_status_history.summary.v1');
    assert.deepEqual(parseCsv(text)[0], [
      'occurredAt', 'eventId', 'transferId', 'clientReference', 'fromStatus', 'toStatus', 'blockingParty', 'reason', 'transferVersion', 'sourceAsset', 'destinationAsset',
    ]);
    assert.deepEqual(
      rows.map((r) => [r.occurredAt, r.transferId, r.fromStatus, r.toStatus]),
      [
        [FROM, D, '', 'PENDING_SETUP'],
        ['2026-03-01T00:00:01.000Z', D, 'PENDING_SETUP', 'READY_TO_FUND'],
        ['2026-03-01T01:00:00.000Z', A, '', 'PENDING_SETUP'],
        ['2026-03-01T01:01:00.000Z', A, 'PENDING_SETUP', 'READY_TO_FUND'],
        ['2026-03-01T01:05:00.000Z', A, 'READY_TO_FUND', 'AWAITING_FUNDS'],
        ['2026-03-01T02:00:00.000Z', A, 'AWAITING_FUNDS', 'IN_PROGRESS'],
        ['2026-03-01T03:00:00.000Z', A, 'IN_PROGRESS', 'COMPLETED'],
        ['2026-03-01T04:00:00.000Z', D, 'READY_TO_FUND', 'CANCELED'],
        ['2026-03-01T05:00:00.000Z', B, 'READY_TO_FUND', 'AWAITING_FUNDS'],
        ['2026-03-01T06:00:00.000Z', B, 'AWAITING_FUNDS', 'IN_REVIEW'],
      ],
    );
    assert.equal(report.artifact.rowCount, 10);
    const review = rows[9]!;
    assert.equal(review.blockingParty, 'SERVICE_OPS');
    assert.equal(review.reason, 'Compliance check');
    assert.equal(review.transferVersion, '4');
  });

  test('the timestamp basis defaults to STATUS_EVENT_AT; statuses select the status moved to', async () => {
    const { rows } = await csv({ type: 'TRANSFER_STATUS_HISTORY', filters: { from: FROM, to: TO, statuses: ['COMPLETED', 'IN_REVIEW'] } });
    assert.deepEqual(rows.map((r) => [r.transferId, r.toStatus]), [[A, 'COMPLETED'], [B, 'IN_REVIEW']]);
  });

  test('CREATED_AT and EXECUTION_PATH are refused for status history', async () => {
    const basis = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: { type: 'TRANSFER_STATUS_HISTORY', filters: { from: FROM, to: TO, timestampBasis: 'CREATED_AT' } } });
    assert.equal(basis.status, 422);
    assert.equal(basis.body.code, 'validation_error');
    assert.deepEqual(basis.body.details.map((d: { path: string }) => d.path), ['filters.timestampBasis']);
    const detail = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: { type: 'TRANSFER_STATUS_HISTORY', detailLevel: 'EXECUTION_PATH', filters: { from: FROM, to: TO } } });
    assert.equal(detail.status, 422);
    assert.deepEqual(detail.body.details.map((d: { path: string }) => d.path), ['detailLevel']);
    // Regression: the pain.002 format named the same problem a second time.
    const iso = await t.request('POST', '/v1/reports/preview', {
      apiKey: org.apiKey,
      body: { type: 'TRANSFER_STATUS_HISTORY', format: 'ISO20022_PAIN_002_001_03', detailLevel: 'EXECUTION_PATH', filters: { from: FROM, to: TO, originalMessageId: 'MSG-1', statuses: ['COMPLETED'] } },
    });
    assert.equal(iso.status, 422);
    assert.deepEqual(iso.body.details.map((d: { path: string }) => d.path), ['detailLevel']);
  });
});

describe('CSV safety', () => {
  test('RFC 4180: CRLF records, quoted commas and doubled quotes', async () => {
    const { text } = await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO } });
    assert.ok(text.endsWith('\r\n'));
    assert.equal(text.split('\r\n').length, 4, 'header, two rows, and the final CRLF');
    assert.ok(text.includes('"INV, ""quoted"""'));
  });

  test('cells that a spreadsheet would run as formulas are neutralized with a leading quote; amounts are untouched', async () => {
    const summary = await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: FROM, to: TO } });
    const d = summary.rows.find((r) => r.transferId === D)!;
    assert.equal(d.clientReference, `'=HYPERLINK("http://evil.example","click")`);
    assert.equal(d.providerReferences, `'-2+3||@SUM(1)`);
    assert.equal(d.quotedSourceAmount, '1000.00');
    const pathReport = await csv({ type: 'TRANSFER_ACTIVITY', detailLevel: 'EXECUTION_PATH', filters: { from: FROM, to: TO } });
    const legRefs = pathReport.rows.filter((r) => r.transferId === D).map((r) => r.providerReference);
    assert.deepEqual(legRefs, [`'-2+3`, '', `'@SUM(1)`]);
    const history = await csv({ type: 'TRANSFER_STATUS_HISTORY', filters: { from: FROM, to: TO, statuses: ['CANCELED'] } });
    assert.equal(history.rows[0]!.reason, `'\tcanceled by +customer`);
    for (const text of exports) {
      for (const cell of parseCsv(text).flat()) {
        assert.ok(!/^[=+\-@\t\r]/.test(cell), `unneutralized cell ${JSON.stringify(cell)}`);
      }
    }
  });

  test('no export contains provider credentials, provider identifiers, quote internals or raw provider data', async () => {
    // Make sure every profile has been produced at least once in this file, then search them all.
    await csv({ type: 'TRANSFER_ACTIVITY', detailLevel: 'EXECUTION_PATH', filters: { from: FROM, to: TO, includeFees: true, timestampBasis: 'STATUS_EVENT_AT' } });
    await csv({ type: 'TRANSFER_ACTIVITY', filters: { from: '2026-01-01T00:00:00Z', to: '2026-12-31T00:00:00Z', includeFees: true } });
    await csv({ type: 'TRANSFER_STATUS_HISTORY', filters: { from: '2026-01-01T00:00:00Z', to: '2026-12-31T00:00:00Z' } });

    const forbidden = new Set<string>(Object.values(NEVER_EXPORTED));
    // Every credential value in the provider configuration files.
    const collect = (v: unknown): void => {
      if (typeof v === 'string') forbidden.add(v);
      else if (v && typeof v === 'object') Object.values(v).forEach(collect);
    };
    const configDir = path.resolve(import.meta.dirname, '../../config');
    for (const file of (fs.existsSync(configDir) ? fs.readdirSync(configDir) : []).filter((f) => /^providers\..*\.json$/.test(f))) {
      const parsed = JSON.parse(fs.readFileSync(path.join(configDir, file), 'utf8')) as { providers: Array<{ credentials?: unknown }> };
      for (const p of parsed.providers) collect(p.credentials);
    }
    // Quote ids, option ids, internal provider ids and destination ids from the database.
    const db = t.server.db.kysely;
    const { rows } = await sql<{ quote_id: string; quote_option_id: string; destination_id: string }>`
      SELECT quote_id, quote_option_id, destination_id FROM transfers WHERE organization_id = ${org.organizationId}`.execute(db);
    for (const r of rows) for (const v of Object.values(r)) forbidden.add(v);
    const legs = await sql<{ provider_id: string }>`SELECT DISTINCT provider_id FROM transfer_legs l JOIN transfers t ON t.id = l.transfer_id WHERE t.organization_id = ${org.organizationId}`.execute(db);
    for (const r of legs.rows) forbidden.add(r.provider_id);
    // A provider's raw payload, where the sandbox providers keep theirs.
    const rawMarker = 'raw_provider_payload_4b1d';
    const hasRaw = await sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'sandbox_provider_legs'`.execute(db);
    if (hasRaw.rows[0]!.n > 0) {
      await sql`INSERT INTO sandbox_provider_legs (provider_reference, provider_id, leg_id, transfer_id, kind, from_asset, to_asset, amount, sandbox_outcome, progress_stage, status, raw_payload)
        VALUES (${`SPEI-${A.slice(0, 8).toUpperCase()}-raw`}, 'sim-mx-spei', ${A}, ${A}, 'PAYOUT', 'MXN', 'MXN', 17250, 'SUCCEED', 'SENT_TO_RAIL', 'PROCESSING', ${JSON.stringify({ debug: rawMarker })})`.execute(db);
      forbidden.add(rawMarker);
    }
    assert.ok(forbidden.size > 15, 'the search list is not empty');

    const everything = exports.join('\n');
    assert.ok(everything.includes(A), 'the exports do contain the transfers');
    for (const secret of forbidden) assert.ok(!everything.includes(secret), `an export contains ${secret}`);
  });
});
