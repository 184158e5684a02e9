// csv.transfer_activity.summary.v1 (one row per transfer) and
// csv.transfer_activity.execution_path.v1 (one row per provider leg). Columns: docs/REPORTS.md.
import { afterLastRow, keysetPages } from '../../platform/paging.ts';
import type { ActivityCursor, ActivityLegRow, ActivityRow } from '../../transfers/reporting.ts';
import type { NormalizedFilters } from '../schemas.ts';
import { classification, railLabel, writeCsv } from './csv.ts';
import type { CsvCell } from './csv.ts';
import type { GenerationContext, ReportProfile } from './profile.ts';

interface ActivityPage {
  transfers: ActivityRow[];
  legs: Map<string, ActivityLegRow[]>;
}

function activityPages(ctx: GenerationContext): AsyncGenerator<ActivityPage> {
  // A page of transfers and their legs is read together, so the read ahead covers both.
  const read = async (after: ActivityCursor | null): Promise<ActivityPage> => {
    const transfers = await ctx.readModel.activityPage(ctx.organizationId, ctx.filters, after, ctx.pageSize);
    const legs = new Map<string, ActivityLegRow[]>();
    for (const leg of await ctx.readModel.legsOf(transfers.map((t) => t.id))) {
      const list = legs.get(leg.transfer_id);
      if (list) list.push(leg);
      else legs.set(leg.transfer_id, [leg]);
    }
    return { transfers, legs };
  };
  const next = afterLastRow(ctx.pageSize, (t: ActivityRow): ActivityCursor => ({ createdAt: t.created_at, id: t.id }));
  return keysetPages(read, (page: ActivityPage) => next(page.transfers));
}

const SUMMARY_COLUMNS = [
  'transferId', 'createdAt', 'updatedAt', 'status', 'blockingParty', 'statusReason', 'classification', 'clientReference', 'entityId',
  'sourceRail', 'destinationRail', 'sourceAsset', 'destinationAsset',
  'quotedSourceAmount', 'quotedDestinationAmount', 'quotedRate', 'actualSourceAmount', 'actualDestinationAmount',
];
const SUMMARY_FEE_COLUMNS = ['feeCurrency', 'quotedFeeTotal', 'actualFeeTotal'];
const SUMMARY_TAIL_COLUMNS = ['providerNames', 'providerReferences', 'originalMessageId', 'originalEndToEndId'];

export const activitySummaryV1: ReportProfile = {
  profileVersion: 'csv.transfer_activity.summary.v1',
  type: 'TRANSFER_ACTIVITY',
  format: 'CSV',
  detailLevel: 'SUMMARY',
  contentType: 'text/csv; charset=utf-8',
  extension: 'csv',
  columns: (f: NormalizedFilters) => [...SUMMARY_COLUMNS, ...(f.includeFees ? SUMMARY_FEE_COLUMNS : []), ...SUMMARY_TAIL_COLUMNS],
  count: (ctx) => ctx.readModel.countActivity(ctx.organizationId, ctx.filters, false),
  async write(ctx, out) {
    const fees = ctx.filters.includeFees;
    async function* records(): AsyncGenerator<CsvCell[][]> {
      for await (const page of activityPages(ctx)) {
        yield page.transfers.map((t) => {
          const legs = page.legs.get(t.id) ?? [];
          return [
            t.id, t.created_at, t.updated_at, t.status, t.blocking_party, t.status_reason, classification(t.destination_relationship), t.client_reference, t.entity_id,
            railLabel(t.from_rail), railLabel(t.to_rail), t.source_asset, t.destination_asset,
            t.quoted_source_amount, t.quoted_destination_amount, t.quoted_rate, t.actual_source_amount, t.actual_destination_amount,
            ...(fees ? [t.fee_currency, t.quoted_fee_total, t.actual_fee_total] : []),
            // In leg order; a leg without a reference keeps its (empty) place so the two lists line up.
            legs.map((l) => l.provider_name).join('|'),
            legs.map((l) => l.provider_reference ?? '').join('|'),
            t.original_message_id, t.original_end_to_end_id,
          ];
        });
      }
    }
    return writeCsv(ctx, out, activitySummaryV1.columns!(ctx.filters), records());
  },
};

const PATH_COLUMNS = [
  'transferId', 'transferCreatedAt', 'transferStatus', 'classification', 'clientReference',
  'legPosition', 'legKind', 'providerName', 'providerReference', 'legStatus', 'progressStage',
  'legFromAsset', 'legToAsset', 'legRail', 'quotedAmountIn', 'quotedAmountOut', 'actualAmountOut', 'legUpdatedAt',
];
const PATH_FEE_COLUMNS = ['transferFeeCurrency', 'transferQuotedFeeTotal', 'transferActualFeeTotal'];

export const activityExecutionPathV1: ReportProfile = {
  profileVersion: 'csv.transfer_activity.execution_path.v1',
  type: 'TRANSFER_ACTIVITY',
  format: 'CSV',
  detailLevel: 'EXECUTION_PATH',
  contentType: 'text/csv; charset=utf-8',
  extension: 'csv',
  columns: (f: NormalizedFilters) => [...PATH_COLUMNS, ...(f.includeFees ? PATH_FEE_COLUMNS : [])],
  count: (ctx) => ctx.readModel.countActivity(ctx.organizationId, ctx.filters, true),
  async write(ctx, out) {
    const fees = ctx.filters.includeFees;
    async function* records(): AsyncGenerator<CsvCell[][]> {
      for await (const page of activityPages(ctx)) {
        const rows: CsvCell[][] = [];
        for (const t of page.transfers) {
          for (const l of page.legs.get(t.id) ?? []) {
            rows.push([
              t.id, t.created_at, t.status, classification(t.destination_relationship), t.client_reference,
              l.position, l.kind, l.provider_name, l.provider_reference, l.status, l.progress_stage,
              l.from_asset, l.to_asset, railLabel(l.rail), l.quoted_amount_in, l.quoted_amount_out, l.actual_amount_out, l.updated_at,
              ...(fees ? [t.fee_currency, t.quoted_fee_total, t.actual_fee_total] : []),
            ]);
          }
        }
        yield rows;
      }
    }
    return writeCsv(ctx, out, activityExecutionPathV1.columns!(ctx.filters), records());
  },
};
