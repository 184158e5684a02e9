// Report statuses and the moves between them (SPEC.md "Report statuses and moves"), as data.
// Every status change in the repository is guarded by this table.
import type { ReportStatus } from './schemas.ts';

export const REPORT_MOVES: Readonly<Record<ReportStatus, readonly ReportStatus[]>> = {
  // PENDING → PENDING is a transient failure: the report is retried (or recovered) as it is.
  PENDING: ['PENDING', 'READY', 'FAILED'],
  READY: [],
  FAILED: [],
};

/** The statuses a report may be in for it to move to `to`. */
export function movableTo(to: ReportStatus): ReportStatus[] {
  return (Object.keys(REPORT_MOVES) as ReportStatus[]).filter((from) => REPORT_MOVES[from].includes(to));
}
