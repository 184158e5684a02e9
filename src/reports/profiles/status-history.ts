// csv.transfer_status_history.summary.v1: one row per transfer status transition (STATUS event)
// in the half-open UTC window, in the order they happened. Columns: docs/REPORTS.md.
import { writeCsv } from './csv.ts';
import type { ReportProfile } from './profile.ts';

// Header of each of the read model's STATUS_HISTORY_FIELDS, in the same order.
const COLUMNS = [
  'occurredAt', 'eventId', 'transferId', 'clientReference', 'fromStatus', 'toStatus', 'blockingParty', 'reason', 'transferVersion',
  'sourceAsset', 'destinationAsset',
];

export const statusHistoryV1: ReportProfile = {
  profileVersion: 'csv.transfer_status_history.summary.v1',
  type: 'TRANSFER_STATUS_HISTORY',
  format: 'CSV',
  detailLevel: 'SUMMARY',
  contentType: 'text/csv; charset=utf-8',
  extension: 'csv',
  columns: () => COLUMNS,
  count: (ctx) => ctx.readModel.countStatusHistory(ctx.organizationId, ctx.filters),
  async write(ctx, out) {
    // The read model's records are already in column order; the trailing sequence is past the
    // last column, so the stringifier leaves it out.
    const records = ctx.readModel.statusHistoryRecords(ctx.organizationId, ctx.filters, ctx.pageSize);
    return writeCsv(ctx, out, COLUMNS, records);
  },
};
