// The double-entry ledger (DECISIONS.md §5): every money movement of a transfer is one entry
// whose postings sum to zero in each currency. A conversion passes both currencies through
// FX_CLEARING, so even an exchange balances per currency. Amounts are exact decimals: they are
// checked and summed as bigint minor units and stored as numeric.
import type { Transaction } from 'kysely';
import { fromMinor, toMinor } from '../platform/money.ts';
import { LedgerRepository } from './repository.ts';
import type { BalanceRow, LedgerEntryRow, LedgerPostingRow } from './repository.ts';

export const ACCOUNTS = {
  CUSTOMER_EXTERNAL: 'CUSTOMER_EXTERNAL',
  CUSTOMER_FUNDS_HELD: 'CUSTOMER_FUNDS_HELD',
  FX_CLEARING: 'FX_CLEARING',
  FEE_REVENUE: 'FEE_REVENUE',
  PAYOUT_IN_TRANSIT: 'PAYOUT_IN_TRANSIT',
  BENEFICIARY_EXTERNAL: 'BENEFICIARY_EXTERNAL',
} as const;
export type Account = (typeof ACCOUNTS)[keyof typeof ACCOUNTS];

export const ENTRY_KINDS = ['FUNDS_IN', 'FEE', 'CONVERSION', 'PAYOUT_SENT', 'PAYOUT_SETTLED', 'PAYOUT_RETURNED', 'FEE_REVERSAL', 'RETURN_TO_CUSTOMER', 'REFUND'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/**
 * Signed by the direction value flows: positive into the account, negative out of it. Every
 * account is read the same way (CUSTOMER_EXTERNAL goes negative as the customer pays in,
 * FEE_REVENUE and BENEFICIARY_EXTERNAL positive as they receive).
 */
export interface Posting {
  account: Account;
  currency: string;
  amount: bigint;
}

export interface EntryInput {
  /** Unique per movement (e.g. "<transferId>:FUNDS_IN"), so a retried step posts nothing twice. */
  key: string;
  organizationId: string;
  transferId: string | null;
  kind: EntryKind;
  description: string;
  postings: Posting[];
}

export class UnbalancedEntryError extends Error {}

/** `amount` flowing out of one account and into another. */
export const move = (from: Account, to: Account, currency: string, amount: bigint): Posting[] => [
  { account: to, currency, amount },
  { account: from, currency, amount: -amount },
];

export class LedgerService {
  readonly #repo: LedgerRepository;

  constructor(db: ConstructorParameters<typeof LedgerRepository>[0]) {
    this.#repo = new LedgerRepository(db);
  }

  /**
   * Posts one balanced entry inside the caller's transaction. Zero postings are dropped; an entry
   * that does not sum to zero in every currency is refused before it reaches the database (which
   * refuses it too). Returns false when the entry had already been posted.
   */
  async post(trx: Transaction<any>, input: EntryInput): Promise<boolean> {
    const postings = input.postings.filter((p) => p.amount !== 0n);
    if (!postings.length) return false;
    const sums = new Map<string, bigint>();
    for (const p of postings) sums.set(p.currency, (sums.get(p.currency) ?? 0n) + p.amount);
    for (const [currency, sum] of sums) {
      if (sum !== 0n) throw new UnbalancedEntryError(`Ledger entry ${input.key} does not balance in ${currency} (off by ${fromMinor(sum, currency)})`);
    }
    // Merge postings to the same account and currency, so an entry reads as one line per account.
    const merged = new Map<string, Posting>();
    for (const p of postings) {
      const k = `${p.account}\u0000${p.currency}`;
      const prior = merged.get(k);
      merged.set(k, prior ? { ...prior, amount: prior.amount + p.amount } : { ...p });
    }
    return this.#repo.insertEntry(
      trx,
      { entry_key: input.key, organization_id: input.organizationId, transfer_id: input.transferId, kind: input.kind, description: input.description },
      [...merged.values()].filter((p) => p.amount !== 0n).map((p) => ({ account: p.account, currency: p.currency, amount: fromMinor(p.amount, p.currency) })),
    );
  }

  /** Balance of each account in each currency for one transfer, in minor units. */
  async transferBalances(transferId: string, trx?: Transaction<any>): Promise<Array<{ account: Account; currency: string; balance: bigint }>> {
    return toBalances(await this.#repo.transferBalances(transferId, trx));
  }

  /** Balance of each account in each currency (one organization's postings, or all). */
  async balances(organizationId?: string): Promise<Array<{ account: Account; currency: string; balance: bigint }>> {
    return toBalances(await this.#repo.balances(organizationId));
  }

  async entries(transferId: string): Promise<Array<LedgerEntryRow & { postings: LedgerPostingRow[] }>> {
    return this.#repo.entries(transferId);
  }
}

function toBalances(rows: BalanceRow[]) {
  return rows.map((r) => ({ account: r.account as Account, currency: r.currency, balance: toMinor(r.balance, r.currency) }));
}
