// Reports over transfers made through the real API and moved by the sandbox engine: what the
// transfer endpoints say is what the reports say, and the pain.002 document is schema-valid.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { create } from 'xmlbuilder2';
import { validateXML } from 'xmllint-wasm';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestServer } from '../../test/helpers/server.ts';
import { csvRecords, generateReport } from '../../test/helpers/reports.ts';
import { createTransfer, driveToRest, fund, getTransfer, newCustomer, quoteOption, waitFor } from '../transfers/test-support.ts';
import type { Customer } from '../transfers/test-support.ts';

const XSD = fs.readFileSync(path.resolve(import.meta.dirname, '../../test/fixtures/iso20022/pain.002.001.03.xsd'), 'utf8');
const MESSAGE = 'E2E-MSG-0001';

let t: TestServer;
let c: Customer;
let from: string;
const transfers: Record<'completed' | 'failed' | 'waiting', any> = {} as never;

async function transfer(amount: string, n: number) {
  const { optionId } = await quoteOption(t, c, amount);
  const res = await createTransfer(t, c, optionId, {
    extra: {
      clientReference: `invoice-${n}`,
      paymentReferences: {
        sourceSystem: 'SAP-ERP',
        originalMessageId: MESSAGE,
        originalMessageNameId: 'pain.001.001.03',
        originalPaymentInformationId: 'PMTINF-1',
        originalInstructionId: `INSTR-${n}`,
        originalEndToEndId: `E2E-${n}`,
      },
    },
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

before(async () => {
  t = await startTestServer({ CORRIDOR_SANDBOX_SPEED: '1000', CORRIDOR_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-reports-e2e-')) });
  c = await newCustomer(t, 'Reports end to end');
  from = new Date(Date.now() - 60_000).toISOString();

  const completed = await transfer('1000.00', 1);
  await waitFor(t, c, completed.id, (tr) => tr.status === 'READY_TO_FUND');
  await fund(t, c, completed.id);
  transfers.completed = await driveToRest(t, c, completed.id);
  assert.equal(transfers.completed.status, 'COMPLETED');

  const failed = await transfer('500.91', 2);
  await driveToRest(t, c, failed.id);
  await fund(t, c, failed.id);
  transfers.failed = await driveToRest(t, c, failed.id);
  assert.equal(transfers.failed.status, 'FAILED');

  const waiting = await transfer('250.00', 3);
  transfers.waiting = await waitFor(t, c, waiting.id, (tr) => tr.status === 'READY_TO_FUND');
});

after(async () => {
  await t?.close();
});

const window = () => ({ from, to: new Date(Date.now() + 60_000).toISOString() });

test('status history lists exactly the STATUS items of each transfer\'s timeline, in order', async () => {
  const { report, text } = await generateReport(t, c.org.apiKey, { type: 'TRANSFER_STATUS_HISTORY', filters: window() });
  assert.equal(report.status, 'READY', JSON.stringify(report));
  const rows = csvRecords(text!);
  for (const tr of Object.values(transfers)) {
    const fresh = await getTransfer(t, c, tr.id);
    const expected = fresh.timeline.filter((e: any) => e.type === 'STATUS').map((e: any) => [e.occurredAt, e.previousStatus ?? '', e.status, e.blockingParty, e.reason ?? '', String(e.version)]);
    const actual = rows.filter((r) => r.transferId === tr.id).map((r) => [r.occurredAt, r.fromStatus, r.toStatus, r.blockingParty, r.reason, r.transferVersion]);
    assert.deepEqual(actual, expected, `transfer ${tr.id}`);
  }
});

// Regression: the CSV's eventId was an internal id no other part of the API showed, and the
// event's createdAt came from the database clock, before the change's occurredAt.
test('status history: each row\'s eventId is the id of that change in GET /v1/events and in webhooks, at the same instant', async () => {
  const { report, text } = await generateReport(t, c.org.apiKey, { type: 'TRANSFER_STATUS_HISTORY', filters: window() });
  assert.equal(report.status, 'READY', JSON.stringify(report));
  const rows = csvRecords(text!).filter((r) => r.transferId === transfers.completed.id);
  assert.ok(rows.length >= 4, text!);
  for (const row of rows) {
    const res = await t.request('GET', `/v1/events/${row.eventId}`, { apiKey: c.org.apiKey });
    assert.equal(res.status, 200, `${row.eventId}: ${res.text}`);
    assert.equal(res.body.type, 'transfer.status_changed');
    assert.deepEqual(
      [res.body.createdAt, res.body.data.transferId, res.body.data.status, res.body.data.previousStatus ?? '', String(res.body.data.version)],
      [row.occurredAt, row.transferId, row.toStatus, row.fromStatus, row.transferVersion],
    );
  }
});

test('activity summary: the transfer\'s own amounts, status and legs', async () => {
  const { report, text } = await generateReport(t, c.org.apiKey, { type: 'TRANSFER_ACTIVITY', filters: { ...window(), includeFees: true } });
  assert.equal(report.status, 'READY');
  const rows = csvRecords(text!);
  assert.equal(rows.length, 3);
  for (const tr of Object.values(transfers)) {
    const fresh = await getTransfer(t, c, tr.id);
    const row = rows.find((r) => r.transferId === tr.id)!;
    assert.equal(row.status, fresh.status);
    assert.equal(row.blockingParty, fresh.blockingParty);
    assert.equal(row.classification, 'BENEFICIARY_PAYMENT');
    assert.equal(row.quotedSourceAmount, fresh.quoted.sourceAmount);
    assert.equal(row.quotedDestinationAmount, fresh.quoted.destinationAmount);
    assert.equal(row.actualSourceAmount, fresh.actual.sourceAmount ?? '');
    assert.equal(row.actualDestinationAmount, fresh.actual.destinationAmount ?? '');
    assert.equal(row.quotedFeeTotal, fresh.quoted.feeTotal);
    assert.equal(row.providerNames, fresh.legs.map((l: any) => l.provider).join('|'));
    assert.equal(row.providerReferences, fresh.legs.map((l: any) => l.providerReference ?? '').join('|'));
    assert.equal(row.originalEndToEndId, fresh.paymentReferences.originalEndToEndId);
  }
});

test('pain.002 for the message group: schema-valid, one entry per transfer with the mapped status', async () => {
  const { report, text } = await generateReport(t, c.org.apiKey, {
    type: 'TRANSFER_STATUS_HISTORY',
    format: 'ISO20022_PAIN_002_001_03',
    filters: { ...window(), originalMessageId: MESSAGE, statuses: ['PENDING_SETUP', 'READY_TO_FUND', 'AWAITING_FUNDS', 'IN_PROGRESS', 'IN_REVIEW', 'COMPLETED', 'FAILED', 'CANCELED'] },
  });
  assert.equal(report.status, 'READY', JSON.stringify(report));
  const result = await validateXML({ xml: [{ fileName: 'report.xml', contents: text! }], schema: [{ fileName: 'pain.002.001.03.xsd', contents: XSD }] });
  assert.deepEqual(result.errors, []);
  const root = create(text!).root().node as any;
  const entries = Array.from(root.getElementsByTagName('TxInfAndSts') as ArrayLike<any>).map((tx) => [
    tx.getElementsByTagName('OrgnlEndToEndId')[0].textContent,
    tx.getElementsByTagName('TxSts')[0].textContent,
  ]);
  assert.deepEqual(entries, [['E2E-1', 'ACSC'], ['E2E-2', 'RJCT'], ['E2E-3', 'PDNG']]);
});
