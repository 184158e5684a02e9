// pain.002.001.03: selection (DECISIONS.md §10), the status mapping (SPEC.md), element order, and
// validation of every document against the official schema with xmllint-wasm (no native code).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { create } from 'xmlbuilder2';
import { validateXML } from 'xmllint-wasm';
import { startTestServer } from '../../test/helpers/server.ts';
import type { TestOrganization, TestServer } from '../../test/helpers/server.ts';
import { generateReport } from '../../test/helpers/reports.ts';
import { insertTransfers, paymentReferences, POLYGON_USDC } from '../../test/fixtures/report-data.ts';
import type { FixtureEvent, FixtureTransfer, TransferStatus } from '../../test/fixtures/report-data.ts';

// The official schema and real bank examples, vendored byte-exact as test data (SOURCES.md there
// says where they came from), so a fresh clone validates on its own.
const ISO_DIR = path.resolve(import.meta.dirname, '../../test/fixtures/iso20022');
// The project's shared reference copy, when it sits beside the repository (as in CI).
const SHARED_ISO_DIR = path.resolve(import.meta.dirname, '../../../shared/iso20022');
const XSD = fs.readFileSync(path.join(ISO_DIR, 'pain.002.001.03.xsd'), 'utf8');
const NS = 'urn:iso:std:iso:20022:tech:xsd:pain.002.001.03';

async function schemaErrors(xml: string, fileName = 'report.xml'): Promise<string[]> {
  const result = await validateXML({ xml: [{ fileName, contents: xml }], schema: [{ fileName: 'pain.002.001.03.xsd', contents: XSD }] });
  return result.errors.map((e) => e.rawMessage);
}

const FROM = '2026-04-01T00:00:00.000Z';
const TO = '2026-04-02T00:00:00.000Z';
const ALL_SUPPORTED = ['PENDING_SETUP', 'READY_TO_FUND', 'AWAITING_FUNDS', 'IN_PROGRESS', 'IN_REVIEW', 'COMPLETED', 'FAILED', 'CANCELED'];
// Longer than three Max105Text pieces, with a character outside the BMP (two UTF-16 units)
// across the first piece's end: pieces are counted in characters, as the schema counts them.
const LONG_REASON =
  'The beneficiary bank rejected the payment because the account named in the instruction was closed '.padEnd(104, '.') +
  '🏦 by its holder; contact the beneficiary for new account details and send a new instruction. ' +
  'Funds are returned to the source account once the beneficiary bank confirms the rejection, usually within two business days; ' +
  'no fee is charged for the returned payment, and the quote used for it cannot be used again.';

const UNICODE_E2E = '🏦'.repeat(35);

let t: TestServer;
let org: TestOrganization;
const ids: Record<string, string> = {};
const documents: string[] = [];

const at = (hhmm: string) => `2026-04-01T${hhmm}:00.000Z`;
const path_ = (...statuses: Array<[TransferStatus, string, string?]>): FixtureEvent[] => statuses.map(([status, when, reason]) => ({ status, at: when, reason: reason ?? null }));

function groupTransfer(name: string, msg: string, pmtInf: string, n: number, events: FixtureEvent[], extra: Partial<FixtureTransfer> = {}): [string, FixtureTransfer] {
  return [name, { createdAt: events[0]!.at, events, paymentReferences: paymentReferences(msg, pmtInf, n), ...extra }];
}

function isoBody(filters: Record<string, unknown>) {
  return { type: 'TRANSFER_STATUS_HISTORY', format: 'ISO20022_PAIN_002_001_03', detailLevel: 'SUMMARY', filters: { from: FROM, to: TO, ...filters } };
}

async function iso(filters: Record<string, unknown>): Promise<{ report: any; xml: string | null }> {
  const { report, text } = await generateReport(t, org.apiKey, isoBody(filters));
  if (text) documents.push(text);
  return { report, xml: text };
}

const elements = (n: any): any[] => Array.from(n.childNodes as ArrayLike<any>).filter((c) => c.nodeType === 1);
const childText = (n: any, name: string): string | null => elements(n).find((c) => c.localName === name)?.textContent ?? null;

before(async () => {
  t = await startTestServer({ CORRIDOR_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'corridor-pain002-')), CORRIDOR_REPORT_PAGE_SIZE: '2' });
  org = await t.newOrganization('ISO reports');
  const M = 'MSG-2026-04-01-A';
  const specs: Array<[string, FixtureTransfer]> = [
    groupTransfer('t1', M, 'PMT-1', 1, path_(['PENDING_SETUP', at('01:01')], ['READY_TO_FUND', at('01:01')])),
    groupTransfer('t2', M, 'PMT-1', 2, path_(['PENDING_SETUP', at('01:02')], ['IN_REVIEW', at('02:00'), 'Manual review'], ['IN_PROGRESS', at('03:00')])),
    groupTransfer('t3', M, 'PMT-1', 3, path_(['PENDING_SETUP', at('01:03')], ['IN_PROGRESS', at('02:00')], ['COMPLETED', at('04:00')])),
    groupTransfer('t4', M, 'PMT-2', 4, path_(['PENDING_SETUP', at('01:04')], ['IN_PROGRESS', at('02:00')], ['FAILED', at('05:00'), 'Beneficiary account closed'])),
    groupTransfer('t5', M, 'PMT-2', 5, path_(['PENDING_SETUP', at('01:05')], ['CANCELED', at('05:30'), LONG_REASON])),
    groupTransfer('t6', M, 'PMT-2', 6, path_(['PENDING_SETUP', at('01:06')], ['IN_REVIEW', at('06:00')])),
    // Completed inside the window and returned after it: the latest event in the window decides.
    groupTransfer('t7', M, 'PMT-1', 7, path_(['PENDING_SETUP', at('01:07')], ['COMPLETED', at('07:00')], ['RETURNED', '2026-04-02T09:00:00.000Z'])),
    // No event inside the window: not selected.
    groupTransfer('t8', M, 'PMT-1', 8, path_(['PENDING_SETUP', '2026-03-31T10:00:00.000Z'], ['COMPLETED', '2026-03-31T12:00:00.000Z'])),
    // Another message group.
    groupTransfer('t9', 'MSG-OTHER', 'PMT-9', 9, path_(['PENDING_SETUP', at('01:00')], ['COMPLETED', at('02:00')])),
    // Crypto destination: outside the fiat profile.
    groupTransfer('t10', M, 'PMT-1', 10, path_(['PENDING_SETUP', at('01:00')], ['COMPLETED', at('02:00')]), { toRail: POLYGON_USDC }),
    // A group whose transfer was completed then returned inside the window.
    groupTransfer('r1', 'MSG-RET', 'PMT-R', 11, path_(['PENDING_SETUP', at('01:00')], ['COMPLETED', at('02:00')], ['RETURNED', at('03:00'), 'Returned by beneficiary bank'])),
    groupTransfer('r2', 'MSG-RET', 'PMT-R', 12, path_(['PENDING_SETUP', at('01:00')], ['COMPLETED', at('02:00')])),
    // A group where one transfer lacks an end-to-end id, and one excluded transfer lacks more.
    groupTransfer('m1', 'MSG-MISSING', 'PMT-M', 13, path_(['PENDING_SETUP', at('01:00')], ['COMPLETED', at('02:00')]), {
      paymentReferences: { ...paymentReferences('MSG-MISSING', 'PMT-M', 13), originalEndToEndId: undefined },
    }),
    groupTransfer('m2', 'MSG-MISSING', 'PMT-M', 14, path_(['PENDING_SETUP', at('01:00')], ['IN_PROGRESS', at('02:00')]), {
      paymentReferences: { originalMessageId: 'MSG-MISSING', originalPaymentInformationId: 'PMT-M' },
    }),
    // A group still being set up and funded: the statuses the main group never ends on.
    groupTransfer('s1', 'MSG-PDNG', 'PMT-S', 16, path_(['PENDING_SETUP', at('01:00')])),
    groupTransfer('s2', 'MSG-PDNG', 'PMT-S', 17, path_(['PENDING_SETUP', at('01:01')], ['READY_TO_FUND', at('01:02')], ['AWAITING_FUNDS', at('01:03')])),
    // References outside Latin-1, one of 35 characters that are 70 UTF-16 units.
    groupTransfer('u1', 'MSG-UNICODE', 'ПЛАТЁЖ-1', 15, path_(['PENDING_SETUP', at('01:00')], ['COMPLETED', at('02:00')]), {
      paymentReferences: { ...paymentReferences('MSG-UNICODE', 'ПЛАТЁЖ-1', 15), originalInstructionId: '指示-15 <&>', originalEndToEndId: UNICODE_E2E },
    }),
  ];
  const created = await insertTransfers(t.server.db.kysely, org.organizationId, specs.map(([, s]) => s));
  specs.forEach(([name], i) => (ids[name] = created[i]!));
});

after(async () => {
  await t?.close();
});

describe('the validator', () => {
  test('xmllint-wasm accepts both real bank examples and refuses a broken document', async () => {
    for (const file of fs.readdirSync(path.join(ISO_DIR, 'examples'))) {
      const xml = fs.readFileSync(path.join(ISO_DIR, 'examples', file), 'utf8');
      assert.deepEqual(await schemaErrors(xml, file), [], file);
    }
    const broken = fs.readFileSync(path.join(ISO_DIR, 'examples', 'nordea_pain_002_v3_txn_reject.xml'), 'utf8').replace('<TxSts>RJCT</TxSts>', '<TxSts>DONE</TxSts>');
    assert.notDeepEqual(await schemaErrors(broken), []);
  });

  test('the schema used is the official one (sha256 recorded in SOURCES.md)', () => {
    const sources = fs.readFileSync(path.join(ISO_DIR, 'SOURCES.md'), 'utf8');
    const recorded = /sha256 ([0-9a-f]{64})/.exec(sources)?.[1];
    assert.equal(recorded, 'dfb211e63f09825ea89f0ceee870db9e82ab2840fbe8b8148d9c4c2a9a99fd87');
    assert.equal(createHash('sha256').update(fs.readFileSync(path.join(ISO_DIR, 'pain.002.001.03.xsd'))).digest('hex'), recorded);
    if (fs.existsSync(SHARED_ISO_DIR)) {
      for (const file of ['pain.002.001.03.xsd', ...fs.readdirSync(path.join(SHARED_ISO_DIR, 'examples')).map((f) => `examples/${f}`)]) {
        assert.ok(fs.readFileSync(path.join(ISO_DIR, file)).equals(fs.readFileSync(path.join(SHARED_ISO_DIR, file))), `${file} differs from the shared copy`);
      }
    }
  });
});

describe('pain.002.001.03.v1', () => {
  test('one valid document for the message group: ids, statuses and element order follow the mapping', async () => {
    const { report, xml } = await iso({ originalMessageId: 'MSG-2026-04-01-A', statuses: ALL_SUPPORTED });
    assert.equal(report.status, 'READY', JSON.stringify(report));
    assert.equal(report.profileVersion, 'pain.002.001.03.v1');
    assert.equal(report.filters.assetScope, 'FIAT', 'the ISO profile is fiat-only');
    assert.equal(report.artifact.rowCount, 7);
    assert.deepEqual(await schemaErrors(xml!), []);

    const root = create(xml!).root().node as any;
    assert.equal(root.localName, 'Document');
    assert.equal(root.namespaceURI, NS);
    const [rpt] = elements(root);
    assert.equal(rpt.localName, 'CstmrPmtStsRpt');
    assert.deepEqual(elements(rpt).map((e) => e.localName), ['GrpHdr', 'OrgnlGrpInfAndSts', 'OrgnlPmtInfAndSts', 'OrgnlPmtInfAndSts']);
    const [grpHdr, orgnlGrp, pmt1, pmt2] = elements(rpt);
    assert.deepEqual(elements(grpHdr).map((e) => e.localName), ['MsgId', 'CreDtTm']);
    const msgId = childText(grpHdr, 'MsgId')!;
    assert.ok(msgId.length >= 1 && msgId.length <= 35);
    assert.equal(msgId, report.id.replace(/-/g, ''));
    assert.equal(childText(grpHdr, 'CreDtTm'), report.generatedAt);
    assert.deepEqual(elements(orgnlGrp).map((e) => [e.localName, e.textContent]), [['OrgnlMsgId', 'MSG-2026-04-01-A'], ['OrgnlMsgNmId', 'pain.001.001.03']]);

    const entries = (pmt: any) =>
      elements(pmt)
        .filter((e) => e.localName === 'TxInfAndSts')
        .map((tx) => ({
          order: elements(tx).map((e) => e.localName),
          stsId: childText(tx, 'StsId'),
          instr: childText(tx, 'OrgnlInstrId'),
          e2e: childText(tx, 'OrgnlEndToEndId'),
          sts: childText(tx, 'TxSts'),
          info: tx.getElementsByTagName('AddtlInf').length ? Array.from(tx.getElementsByTagName('AddtlInf') as ArrayLike<any>).map((a) => a.textContent as string) : [],
          reasonCode: tx.getElementsByTagName('Cd')[0]?.textContent ?? null,
          ref: childText(tx, 'AcctSvcrRef'),
        }));
    assert.equal(childText(pmt1, 'OrgnlPmtInfId'), 'PMT-1');
    assert.equal(elements(pmt1)[0].localName, 'OrgnlPmtInfId');
    assert.deepEqual(entries(pmt1).map((e) => [e.instr, e.e2e, e.sts]), [
      ['INSTR-1', 'E2E-1', 'PDNG'],
      ['INSTR-2', 'E2E-2', 'ACSP'],
      ['INSTR-3', 'E2E-3', 'ACSC'],
      ['INSTR-7', 'E2E-7', 'ACSC'],
    ]);
    assert.equal(childText(pmt2, 'OrgnlPmtInfId'), 'PMT-2');
    const p2 = entries(pmt2);
    assert.deepEqual(p2.map((e) => [e.instr, e.e2e, e.sts]), [
      ['INSTR-4', 'E2E-4', 'RJCT'],
      ['INSTR-5', 'E2E-5', 'RJCT'],
      ['INSTR-6', 'E2E-6', 'ACSP'],
    ]);
    const rejected = p2[0]!;
    assert.deepEqual(rejected.order, ['StsId', 'OrgnlInstrId', 'OrgnlEndToEndId', 'TxSts', 'StsRsnInf', 'AcctSvcrRef']);
    assert.equal(rejected.reasonCode, 'NARR');
    assert.deepEqual(rejected.info, ['Beneficiary account closed']);
    assert.equal(rejected.ref, ids.t4!.replace(/-/g, ''));
    // A long reason is split, whole, into Max105Text pieces of characters (not UTF-16 units).
    const characters = [...LONG_REASON].length;
    assert.ok(characters > 315);
    assert.equal(p2[1]!.info.length, Math.ceil(characters / 105));
    assert.ok(p2[1]!.info.every((s) => [...s].length <= 105));
    assert.equal(p2[1]!.info.join(''), LONG_REASON);
    assert.ok(p2[1]!.info[0]!.endsWith('.🏦'));
    assert.ok(p2[1]!.info[1]!.startsWith(' by its holder'));
    assert.deepEqual(p2[2]!.order, ['StsId', 'OrgnlInstrId', 'OrgnlEndToEndId', 'TxSts', 'AcctSvcrRef']);
    for (const e of [...entries(pmt1), ...p2]) assert.ok(e.stsId && e.stsId.length <= 35);
    assert.ok(!xml!.includes('INSTR-8') && !xml!.includes('INSTR-9') && !xml!.includes('INSTR-10'));
  });

  test('a status outside filters.statuses is left out', async () => {
    const { report, xml } = await iso({ originalMessageId: 'MSG-2026-04-01-A', statuses: ['COMPLETED'] });
    assert.equal(report.status, 'READY');
    assert.equal(report.artifact.rowCount, 2);
    assert.deepEqual(await schemaErrors(xml!), []);
    const root = create(xml!).root().node as any;
    const statuses = Array.from(root.getElementsByTagName('TxSts') as ArrayLike<any>).map((n) => n.textContent as string);
    const instrs = Array.from(root.getElementsByTagName('OrgnlInstrId') as ArrayLike<any>).map((n) => n.textContent as string);
    assert.deepEqual(statuses, ['ACSC', 'ACSC']);
    assert.deepEqual(instrs, ['INSTR-3', 'INSTR-7']);
  });

  test('PENDING_SETUP and AWAITING_FUNDS as the latest status map to PDNG', async () => {
    const { report, xml } = await iso({ originalMessageId: 'MSG-PDNG', statuses: ['PENDING_SETUP', 'AWAITING_FUNDS'] });
    assert.equal(report.status, 'READY', JSON.stringify(report));
    assert.deepEqual(await schemaErrors(xml!), []);
    const root = create(xml!).root().node as any;
    const entries = Array.from(root.getElementsByTagName('TxInfAndSts') as ArrayLike<any>).map((tx) => [childText(tx, 'OrgnlInstrId'), childText(tx, 'TxSts')]);
    assert.deepEqual(entries, [
      ['INSTR-16', 'PDNG'],
      ['INSTR-17', 'PDNG'],
    ]);
  });

  test('a group with nothing to report is still a valid document', async () => {
    const { report, xml } = await iso({ originalMessageId: 'MSG-2026-04-01-A', statuses: ['AWAITING_FUNDS'] });
    assert.equal(report.status, 'READY');
    assert.equal(report.artifact.rowCount, 0);
    assert.deepEqual(await schemaErrors(xml!), []);
  });

  test('RETURNED as the latest status in the window fails generation with unsupported_status_in_window; no earlier status is emitted', async () => {
    for (const statuses of [ALL_SUPPORTED, ['COMPLETED']]) {
      const { report, xml } = await iso({ originalMessageId: 'MSG-RET', statuses });
      assert.equal(report.status, 'FAILED');
      assert.equal(report.errorCode, 'unsupported_status_in_window');
      assert.match(report.errorMessage, /RETURNED or REFUNDED/);
      assert.equal(report.artifact, null);
      assert.equal(xml, null);
      const link = await t.request('POST', `/v1/reports/${report.id}/download`, { apiKey: org.apiKey });
      assert.equal(link.status, 409);
      assert.equal(link.body.code, 'report_not_ready');
    }
  });

  test('an included transfer without all six paymentReferences fails with missing_payment_references; an excluded one does not matter', async () => {
    const failed = await iso({ originalMessageId: 'MSG-MISSING', statuses: ['COMPLETED'] });
    assert.equal(failed.report.status, 'FAILED');
    assert.equal(failed.report.errorCode, 'missing_payment_references');
    assert.match(failed.report.errorMessage, new RegExp(ids.m1!));
    // m2 (IN_PROGRESS, references mostly missing) is left out by the status selection, m1 too.
    const fine = await iso({ originalMessageId: 'MSG-MISSING', statuses: ['AWAITING_FUNDS'] });
    assert.equal(fine.report.status, 'READY');
    assert.deepEqual(await schemaErrors(fine.xml!), []);
  });

  test('references outside Latin-1 are emitted unchanged; Max35Text counts characters, not UTF-16 units', async () => {
    const { report, xml } = await iso({ originalMessageId: 'MSG-UNICODE', statuses: ['COMPLETED'] });
    assert.equal(report.status, 'READY', JSON.stringify(report));
    assert.equal(report.artifact.rowCount, 1);
    assert.deepEqual(await schemaErrors(xml!), []);
    const root = create(xml!).root().node as any;
    const text = (name: string) => root.getElementsByTagName(name)[0]?.textContent;
    assert.equal(text('OrgnlPmtInfId'), 'ПЛАТЁЖ-1');
    assert.equal(text('OrgnlInstrId'), '指示-15 <&>');
    assert.equal(text('OrgnlEndToEndId'), UNICODE_E2E);
  });

  test('preview: matchingTransferCount is the selection, outputRowCount the status entries', async () => {
    const res = await t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body: isoBody({ originalMessageId: 'MSG-2026-04-01-A', statuses: ['COMPLETED', 'FAILED'] }) });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.matchingTransferCount, 7);
    assert.equal(res.body.outputRowCount, 3);
    assert.equal(res.body.exceedsLimits, false);
  });

  test('request rules: originalMessageId and statuses required, RETURNED/REFUNDED refused, fiat status history only', async () => {
    const preview = (body: unknown) => t.request('POST', '/v1/reports/preview', { apiKey: org.apiKey, body });
    const missing = await preview(isoBody({}));
    assert.equal(missing.status, 422);
    assert.equal(missing.body.code, 'validation_error');
    assert.deepEqual(missing.body.details.map((d: { path: string }) => d.path).sort(), ['filters.originalMessageId', 'filters.statuses']);
    const create = await t.request('POST', '/v1/reports', { apiKey: org.apiKey, body: isoBody({ originalMessageId: 'MSG-2026-04-01-A' }), headers: { 'idempotency-key': 'iso-no-statuses' } });
    assert.equal(create.status, 422);
    assert.equal(create.body.code, 'validation_error');
    for (const bad of [['RETURNED'], ['COMPLETED', 'REFUNDED']]) {
      const res = await preview(isoBody({ originalMessageId: 'MSG-2026-04-01-A', statuses: bad }));
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'unsupported_status');
      const created = await t.request('POST', '/v1/reports', { apiKey: org.apiKey, body: isoBody({ originalMessageId: 'MSG-2026-04-01-A', statuses: bad }), headers: { 'idempotency-key': `iso-${bad.join('-')}` } });
      assert.equal(created.status, 422);
      assert.equal(created.body.code, 'unsupported_status');
    }
    const activity = await preview({ ...isoBody({ originalMessageId: 'M', statuses: ['COMPLETED'] }), type: 'TRANSFER_ACTIVITY' });
    assert.equal(activity.status, 422);
    assert.deepEqual(activity.body.details.map((d: { path: string }) => d.path), ['type']);
    const allAssets = await preview(isoBody({ originalMessageId: 'M', statuses: ['COMPLETED'], assetScope: 'ALL' }));
    assert.equal(allAssets.status, 422);
    assert.deepEqual(allAssets.body.details.map((d: { path: string }) => d.path), ['filters.assetScope']);
    const longId = await preview(isoBody({ originalMessageId: 'M'.repeat(36), statuses: ['COMPLETED'] }));
    assert.equal(longId.status, 422);
  });

  test('every document produced in this file validates against the official schema', async () => {
    assert.ok(documents.length >= 4);
    for (const xml of documents) assert.deepEqual(await schemaErrors(xml), []);
  });
});
