// The one transfer state machine (DECISIONS.md §5, §10). Every status, every allowed move and
// who holds the next action are data here; TransferService.transition() is the only reader and
// the only writer of a transfer's status. Legs have their own, smaller table.
import { LEG_STATUSES, PROGRESS_STAGES, RETURNED_STAGE } from '../providers/adapter.ts';
import type { LegKind, LegStatus } from '../providers/adapter.ts';

export const TRANSFER_STATUSES = [
  'PENDING_SETUP',
  'READY_TO_FUND',
  'AWAITING_FUNDS',
  'IN_PROGRESS',
  'IN_REVIEW',
  'COMPLETED',
  'FAILED',
  'RETURNED',
  'REFUNDED',
  'CANCELED',
] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export const BLOCKING_PARTIES = ['CUSTOMER', 'SERVICE_OPS', 'PROVIDER', 'NONE'] as const;
export type BlockingParty = (typeof BLOCKING_PARTIES)[number];

/**
 * A move may depend on whether the customer's funds have arrived: before them a transfer can be
 * canceled or sent back to funding; after them only delivered, given back or refunded.
 */
export type FundsCondition = 'ANY' | 'BEFORE_FUNDS' | 'AFTER_FUNDS';

interface StatusRule {
  blockingParty: BlockingParty;
  terminal: boolean;
  moves: Partial<Record<TransferStatus, FundsCondition>>;
}

export const TRANSFER_STATES: Record<TransferStatus, StatusRule> = {
  // The engine is preparing the execution path with the providers.
  PENDING_SETUP: { blockingParty: 'PROVIDER', terminal: false, moves: { READY_TO_FUND: 'ANY', CANCELED: 'ANY', FAILED: 'ANY' } },
  // Funding instructions can be requested; funds arriving without a session are accepted too.
  READY_TO_FUND: { blockingParty: 'CUSTOMER', terminal: false, moves: { AWAITING_FUNDS: 'ANY', IN_PROGRESS: 'ANY', IN_REVIEW: 'ANY', CANCELED: 'ANY' } },
  // A funding session is open; it expiring sends the transfer back to READY_TO_FUND.
  AWAITING_FUNDS: { blockingParty: 'CUSTOMER', terminal: false, moves: { READY_TO_FUND: 'ANY', IN_PROGRESS: 'ANY', IN_REVIEW: 'ANY', CANCELED: 'ANY' } },
  // Funds received; the legs are executing.
  IN_PROGRESS: { blockingParty: 'PROVIDER', terminal: false, moves: { IN_REVIEW: 'ANY', COMPLETED: 'ANY', FAILED: 'ANY', RETURNED: 'ANY', REFUNDED: 'ANY' } },
  // Operations staff decide: approval resumes execution (or funding), rejection gives money back.
  IN_REVIEW: {
    blockingParty: 'SERVICE_OPS',
    terminal: false,
    moves: { IN_PROGRESS: 'AFTER_FUNDS', REFUNDED: 'AFTER_FUNDS', READY_TO_FUND: 'BEFORE_FUNDS', FAILED: 'BEFORE_FUNDS', CANCELED: 'BEFORE_FUNDS' },
  },
  COMPLETED: { blockingParty: 'NONE', terminal: true, moves: {} },
  FAILED: { blockingParty: 'NONE', terminal: true, moves: {} },
  RETURNED: { blockingParty: 'NONE', terminal: true, moves: {} },
  REFUNDED: { blockingParty: 'NONE', terminal: true, moves: {} },
  CANCELED: { blockingParty: 'NONE', terminal: true, moves: {} },
};

export const blockingPartyOf = (status: TransferStatus): BlockingParty => TRANSFER_STATES[status].blockingParty;
export const isTerminal = (status: TransferStatus): boolean => TRANSFER_STATES[status].terminal;

/** Why a move is refused, or null when the table allows it. */
export function refuseMove(from: TransferStatus, to: TransferStatus, fundsReceived: boolean): string | null {
  const condition = TRANSFER_STATES[from].moves[to];
  if (!condition) return `A transfer cannot move from ${from} to ${to}`;
  if (condition === 'BEFORE_FUNDS' && fundsReceived) return `A transfer cannot move from ${from} to ${to} once its funds have been received`;
  if (condition === 'AFTER_FUNDS' && !fundsReceived) return `A transfer cannot move from ${from} to ${to} before its funds have been received`;
  return null;
}

/** Statuses from which the customer may still cancel (before the funds arrive). */
export const CANCELABLE: readonly TransferStatus[] = TRANSFER_STATUSES.filter((s) => TRANSFER_STATES[s].moves.CANCELED);

export { LEG_STATUSES, PROGRESS_STAGES, RETURNED_STAGE };
export type { LegKind, LegStatus };
export const LEG_KINDS = ['COLLECTION', 'CONVERSION', 'PAYOUT'] as const satisfies readonly LegKind[];

/** Every progressStage a leg can show, across kinds (documented per kind in the schemas). */
export const ALL_PROGRESS_STAGES = [...new Set([...Object.values(PROGRESS_STAGES).flat(), RETURNED_STAGE])] as string[];

/** Allowed leg status moves. A leg may also stay in its status and move to a later stage. */
export const LEG_MOVES: Record<LegStatus, readonly LegStatus[]> = {
  PENDING: ['PROCESSING', 'COMPLETED', 'FAILED', 'CANCELED'],
  PROCESSING: ['PROCESSING', 'COMPLETED', 'FAILED', 'RETURNED', 'CANCELED'],
  COMPLETED: [],
  FAILED: [],
  RETURNED: [],
  CANCELED: [],
};

export const isLegTerminal = (status: LegStatus): boolean => LEG_MOVES[status].length === 0;

/**
 * How far a leg has come, to ignore a provider report that is older than what is recorded (two
 * steps racing, or a report read before a newer one was applied).
 */
export function legProgress(kind: LegKind, status: LegStatus, stage: string): number {
  if (status === 'PENDING') return 0;
  const stages: readonly string[] = PROGRESS_STAGES[kind];
  const index = stages.indexOf(stage);
  const base = 1 + (index < 0 ? stages.length : index) * 2;
  return isLegTerminal(status) ? base + 1 + stages.length * 2 : base;
}

export const firstStage = (kind: LegKind): string => PROGRESS_STAGES[kind][0];
