// pain.002.001.03.v1: an ISO 20022 CustomerPaymentStatusReportV03 for one original message group
// (filters.originalMessageId), streamed with xmlbuilder2's callback builder. Selection follows
// DECISIONS.md §10 and the status mapping is SPEC.md's table, nothing else.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { afterLastRow, keysetPages } from '../../platform/paging.ts';
import type { IsoCursor, IsoEntryRow } from '../../transfers/reporting.ts';
import type { TransferStatus } from '../schemas.ts';
import { assertRowLimit, ReportFailure } from './profile.ts';
import type { GenerationContext, ReportProfile } from './profile.ts';

export const PAIN_002_NAMESPACE = 'urn:iso:std:iso:20022:tech:xsd:pain.002.001.03';

/** SPEC.md "Mapping of transfer statuses to pain.002 transaction status". RETURNED and REFUNDED have none. */
export const PAIN_002_STATUS: Partial<Record<TransferStatus, 'PDNG' | 'ACSP' | 'ACSC' | 'RJCT'>> = {
  PENDING_SETUP: 'PDNG',
  READY_TO_FUND: 'PDNG',
  AWAITING_FUNDS: 'PDNG',
  IN_PROGRESS: 'ACSP',
  IN_REVIEW: 'ACSP',
  COMPLETED: 'ACSC',
  FAILED: 'RJCT',
  CANCELED: 'RJCT',
};

/** Statuses that have no pain.002 mapping (SPEC.md): refused in filters.statuses, and a failed check as a group's latest status in the window. */
export const UNMAPPED_STATUSES: readonly TransferStatus[] = ['RETURNED', 'REFUNDED'];

// XML 1.0 cannot carry most control characters; a reason text holding one must not break the file.
const NOT_XML = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const xmlText = (s: string) => s.replace(NOT_XML, ' ');

/**
 * The whole reason as Max105Text pieces, for StsRsnInf/AddtlInf (which the schema repeats without
 * bound). The schema counts characters, so pieces are cut between code points, never inside a
 * surrogate pair.
 */
function additionalInfo(reason: string): string[] {
  const characters = [...xmlText(reason).trim()];
  const pieces: string[] = [];
  for (let i = 0; i < characters.length; i += 105) pieces.push(characters.slice(i, i + 105).join(''));
  return pieces;
}

const compactId = (uuid: string) => uuid.replace(/-/g, '');

/** Max35Text counts characters (code points), as the transfer API and the read model's length() do, not UTF-16 units. */
const isMax35Text = (v: string | null) => v !== null && v.length > 0 && [...v].length <= 35;

function referencesOf(row: IsoEntryRow): { pmtInfId: string; instrId: string; endToEndId: string } {
  const fields = [row.source_system, row.original_message_id, row.original_message_name_id, row.original_payment_information_id, row.original_instruction_id, row.original_end_to_end_id];
  if (!fields.every(isMax35Text)) {
    throw new ReportFailure('missing_payment_references', `Transfer ${row.transfer_id} does not carry all six paymentReferences (1 to 35 characters each)`);
  }
  return { pmtInfId: row.original_payment_information_id!, instrId: row.original_instruction_id!, endToEndId: row.original_end_to_end_id! };
}

export const pain002V1: ReportProfile = {
  profileVersion: 'pain.002.001.03.v1',
  type: 'TRANSFER_STATUS_HISTORY',
  format: 'ISO20022_PAIN_002_001_03',
  detailLevel: 'SUMMARY',
  contentType: 'application/xml; charset=utf-8',
  extension: 'xml',

  async count(ctx) {
    const c = await ctx.readModel.isoCounts(ctx.organizationId, ctx.filters, UNMAPPED_STATUSES);
    return { matchingTransferCount: c.matchingTransferCount, outputRowCount: c.outputRowCount };
  },

  async check(ctx) {
    const c = await ctx.readModel.isoCounts(ctx.organizationId, ctx.filters, UNMAPPED_STATUSES);
    if (c.unsupported > 0) {
      throw new ReportFailure(
        'unsupported_status_in_window',
        `${c.unsupported} transfer(s) of message ${ctx.filters.originalMessageId} have RETURNED or REFUNDED as their latest status in the window, which pain.002 cannot express (for example ${c.firstUnsupported})`,
      );
    }
    if (c.incomplete > 0) {
      throw new ReportFailure(
        'missing_payment_references',
        `${c.incomplete} included transfer(s) do not carry all six paymentReferences of 1 to 35 characters (for example ${c.firstIncomplete})`,
      );
    }
  },

  async write(ctx: GenerationContext, out: Writable): Promise<number> {
    const f = ctx.filters;
    const originalMessageId = f.originalMessageId!;
    const pages = keysetPages(
      (after: IsoCursor | null) => ctx.readModel.isoPage(ctx.organizationId, f, after, ctx.pageSize),
      afterLastRow(ctx.pageSize, (last: IsoEntryRow): IsoCursor => ({ sortKey: last.sort_key, createdAt: last.created_at, id: last.transfer_id })),
    );
    const first = await pages.next();
    const firstRow = first.done ? undefined : first.value[0];
    // The group's own record of the original message name; with no entry to emit, any transfer of the group.
    if (firstRow) referencesOf(firstRow);
    const nameId = firstRow?.original_message_name_id ?? (await ctx.readModel.originalMessageNameId(ctx.organizationId, originalMessageId));
    if (!nameId) {
      throw new ReportFailure('missing_payment_references', `No transfer of message ${originalMessageId} carries paymentReferences.originalMessageNameId`);
    }

    const { createCB } = await import('xmlbuilder2');
    let failed: Error | null = null;
    let waitForDrain = false;
    const xml = createCB({
      prettyPrint: true,
      data: (chunk: string) => {
        if (!out.write(chunk)) waitForDrain = true;
      },
      error: (err: Error) => {
        failed = err;
      },
    });
    const flush = async () => {
      if (failed) throw failed;
      if (waitForDrain) {
        waitForDrain = false;
        await once(out, 'drain');
      }
    };

    xml.dec({ version: '1.0', encoding: 'UTF-8' });
    xml.ele('Document', { xmlns: PAIN_002_NAMESPACE }).ele('CstmrPmtStsRpt');
    xml.ele('GrpHdr')
      .ele('MsgId').txt(compactId(ctx.reportId)).up()
      .ele('CreDtTm').txt(ctx.generatedAt.toISOString()).up()
      .up();
    xml.ele('OrgnlGrpInfAndSts')
      .ele('OrgnlMsgId').txt(xmlText(originalMessageId)).up()
      .ele('OrgnlMsgNmId').txt(xmlText(nameId)).up()
      .up();

    let rows = 0;
    let openGroup: string | null = null;
    for (let step = first; !step.done; step = await pages.next()) {
      const page = step.value;
      rows += page.length;
      assertRowLimit(ctx, rows);
      for (const row of page) {
        const refs = referencesOf(row);
        const status = PAIN_002_STATUS[row.status];
        if (!status) {
          throw new ReportFailure('unsupported_status_in_window', `Transfer ${row.transfer_id} has ${row.status} as its latest status in the window`);
        }
        if (refs.pmtInfId !== openGroup) {
          if (openGroup !== null) xml.up();
          xml.ele('OrgnlPmtInfAndSts').ele('OrgnlPmtInfId').txt(xmlText(refs.pmtInfId)).up();
          openGroup = refs.pmtInfId;
        }
        xml.ele('TxInfAndSts')
          .ele('StsId').txt(compactId(row.event_id)).up()
          .ele('OrgnlInstrId').txt(xmlText(refs.instrId)).up()
          .ele('OrgnlEndToEndId').txt(xmlText(refs.endToEndId)).up()
          .ele('TxSts').txt(status).up();
        const info = row.reason ? additionalInfo(row.reason) : [];
        if (info.length) {
          xml.ele('StsRsnInf').ele('Rsn').ele('Cd').txt('NARR').up().up();
          for (const piece of info) xml.ele('AddtlInf').txt(piece).up();
          xml.up();
        }
        xml.ele('AcctSvcrRef').txt(compactId(row.transfer_id)).up();
        xml.up();
      }
      await flush();
      await ctx.progress(rows);
    }
    if (openGroup !== null) xml.up();
    xml.up().up().end();
    await flush();
    out.end();
    await once(out, 'finish');
    return rows;
  },
};
