// Funding (SPEC.md "Funding instructions", DECISIONS.md §5): a session hands the customer
// instructions that belong to one transfer only, and moves the transfer READY_TO_FUND →
// AWAITING_FUNDS in the same transaction; its expiry moves it back. Proofs of payment are
// stored for people to look at and never change the transfer's status.
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Kysely, Transaction } from 'kysely';
import type { Environment } from '../platform/config.ts';
import { ApiError, validationError } from '../platform/http/errors.ts';
import type { Logger } from '../platform/logger.ts';
import { normalize } from '../platform/money.ts';
import { iso } from '../platform/time.ts';
import type { Rail } from '../providers/adapter.ts';
import { generateInstructions, UnsupportedFundingRail } from './instructions.ts';
import type { FundingInstructions } from './instructions.ts';
import { EmptyProof, PROOF_MAX_BYTES, ProofFileStore, ProofTooLarge, UnsupportedProofType, UploadInterrupted } from './proof-files.ts';
import { FundingRepository } from './repository.ts';
import type { FundingProofRow, FundingSessionRow } from './repository.ts';
import { newId } from '../platform/ids.ts';

/** The part of a transfer funding needs, read through the transfer service. */
export interface FundableTransfer {
  id: string;
  status: string;
  /** The rail the customer pays in on. */
  sourceRail: Rail;
  sourceAsset: string;
  quotedSourceAmount: string;
  /** Customer-visible name of the provider collecting the funds. */
  collectingProvider: string | null;
}

export interface TransitionRequest {
  organizationId: string;
  transferId: string;
  to: 'READY_TO_FUND' | 'AWAITING_FUNDS';
  reason?: string;
  actor?: Actor;
}

export interface Actor {
  userId?: string | null;
  apiKeyId?: string | null;
  system?: string;
}

/** What funding needs from the transfer engine (TransferService implements it). */
export interface FundingTransfers {
  /**
   * The transfer as the organization sees it; 404 not_found for another organization's id.
   * With `db` (a transaction), read through it.
   */
  getForFunding(organizationId: string, transferId: string, db?: Kysely<any> | Transaction<any>): Promise<FundableTransfer>;
  /** The one state-machine function, run inside the caller's transaction. */
  transition(trx: Transaction<any>, request: TransitionRequest): Promise<unknown>;
}

export interface FundingSession {
  id: string;
  transferId: string;
  status: FundingSessionRow['status'];
  instructions: FundingInstructions;
  expiresAt: string;
  createdAt: string;
}

export interface FundingProof {
  id: string;
  transferId: string;
  fileName: string;
  contentType: FundingProofRow['content_type'];
  sizeBytes: number;
  sha256: string;
  uploadedAt: string;
}

export const SESSION_EXPIRED_REASON = 'funding_session_expired';
export const SESSION_OPENED_REASON = 'funding_session_opened';

// Statuses in which a transfer's funds have arrived: a session still open then has done its job.
const FUNDED = new Set(['IN_PROGRESS', 'COMPLETED', 'RETURNED', 'REFUNDED']);

/** Why no session can be opened for a transfer in this status (409 with a code per situation). */
function refusal(status: string): ApiError {
  if (status === 'PENDING_SETUP') {
    return new ApiError(409, 'transfer_not_ready_to_fund', 'The execution path is still being prepared; request funding instructions once the transfer is READY_TO_FUND');
  }
  if (status === 'IN_REVIEW') return new ApiError(409, 'transfer_in_review', 'The transfer is in review; funding instructions are available again if it returns to READY_TO_FUND');
  if (FUNDED.has(status)) return new ApiError(409, 'transfer_already_funded', `The transfer's funds have already been received (status ${status})`);
  return new ApiError(409, 'transfer_closed', `The transfer is ${status} and takes no more funds`);
}

const MAX_GENERATION_ATTEMPTS = 8;

export class FundingService {
  readonly #db: Kysely<any>;
  readonly #repo: FundingRepository;
  readonly #files: ProofFileStore;
  readonly #env: Environment;
  readonly #ttlSeconds: number;
  readonly #transfers: () => FundingTransfers;
  readonly #log: Logger | undefined;

  constructor(deps: {
    db: Kysely<any>;
    env: Environment;
    dataDir: string;
    sessionTtlSeconds: number;
    /** Late-bound: the transfer service also asks funding for instructions. */
    transfers: () => FundingTransfers;
    log?: Logger;
  }) {
    this.#db = deps.db;
    this.#repo = new FundingRepository(deps.db);
    this.#files = new ProofFileStore(deps.dataDir);
    this.#env = deps.env;
    this.#ttlSeconds = deps.sessionTtlSeconds;
    this.#transfers = deps.transfers;
    this.#log = deps.log;
  }

  get proofDirectory(): string {
    return this.#files.directory;
  }

  /**
   * Opens the transfer's funding session, or returns the one already open: the request is
   * naturally idempotent. `created` says which, for the 201/200 answer.
   */
  async openSession(organizationId: string, transferId: string, actor?: Actor): Promise<{ session: FundingSession; created: boolean }> {
    const transfers = this.#transfers();
    const transfer = await transfers.getForFunding(organizationId, transferId);
    if (!['READY_TO_FUND', 'AWAITING_FUNDS'].includes(transfer.status)) throw refusal(transfer.status);

    return this.#db.transaction().execute(async (trx) => {
      await this.#repo.lockTransfer(trx, transferId);
      const now = new Date();
      // Read again under the lock: a simultaneous request may have opened a session meanwhile.
      let { status } = await transfers.getForFunding(organizationId, transferId, trx);
      if (!['READY_TO_FUND', 'AWAITING_FUNDS'].includes(status)) throw refusal(status);
      const open = await this.#repo.findActive(transferId, trx);
      if (open && open.expires_at > now) {
        // Back from review before the session ran out: the same instructions are still good.
        if (status === 'READY_TO_FUND') await transfers.transition(trx, { organizationId, transferId, to: 'AWAITING_FUNDS', reason: SESSION_OPENED_REASON, ...(actor ? { actor } : {}) });
        return { session: toSession(open), created: false };
      }
      if (open) {
        // Past its time but not yet swept by the expiry job: expire it here, as the job would.
        // The transfer moves first, then the session, the order the transfer engine locks them in.
        if (status === 'AWAITING_FUNDS') {
          await transfers.transition(trx, { organizationId, transferId, to: 'READY_TO_FUND', reason: SESSION_EXPIRED_REASON, actor: { system: 'funding' } });
          status = 'READY_TO_FUND';
        }
        await this.#repo.close(trx, open.id, 'EXPIRED', now);
      }

      const session = await this.#insertFreshSession(trx, organizationId, transfer, now);
      // An AWAITING_FUNDS transfer without an open session (moved there by the engine) keeps its status.
      if (status === 'READY_TO_FUND') {
        await transfers.transition(trx, { organizationId, transferId, to: 'AWAITING_FUNDS', reason: SESSION_OPENED_REASON, ...(actor ? { actor } : {}) });
      }
      return { session: toSession(session), created: true };
    });
  }

  async #insertFreshSession(trx: Transaction<any>, organizationId: string, transfer: FundableTransfer, now: Date): Promise<FundingSessionRow> {
    const exactAmount = normalize(transfer.quotedSourceAmount, transfer.sourceAsset);
    for (let attempt = 0; attempt < MAX_GENERATION_ATTEMPTS; attempt++) {
      let generated;
      try {
        generated = generateInstructions({
          rail: transfer.sourceRail,
          exactAmount,
          beneficiaryName: transfer.collectingProvider ?? 'Corridor client funds',
          env: this.#env,
        });
      } catch (err) {
        if (err instanceof UnsupportedFundingRail) throw new ApiError(409, 'funding_rail_unsupported', err.message);
        throw err;
      }
      const row = await this.#repo.insertSession(trx, {
        id: newId(),
        organization_id: organizationId,
        transfer_id: transfer.id,
        status: 'ACTIVE',
        reference: generated.reference,
        deposit_key: generated.depositKey,
        instructions: generated.instructions,
        expires_at: new Date(now.getTime() + this.#ttlSeconds * 1000),
        created_at: now,
      });
      if (row) return row;
      // The reference or the deposit coordinates were handed out before: draw again.
    }
    throw new Error(`could not draw unused funding instructions for transfer ${transfer.id}`);
  }

  /** The open session's instructions, for the transfer detail; null when none is open. */
  async activeInstructions(organizationId: string, transferId: string, db: Kysely<any> | Transaction<any> = this.#db): Promise<FundingInstructions | null> {
    const open = await this.#repo.findActiveInOrganization(organizationId, transferId, db);
    return open && open.expires_at > new Date() ? open.instructions : null;
  }

  /**
   * Closes the transfer's open session inside the caller's transaction: COMPLETED when its funds
   * arrived, EXPIRED when the transfer stopped waiting for them (canceled, for example).
   */
  async closeActiveSession(trx: Transaction<any>, request: { transferId: string; status: 'COMPLETED' | 'EXPIRED' }): Promise<void> {
    const open = await this.#repo.findActive(request.transferId, trx);
    if (open) await this.#repo.close(trx, open.id, request.status, new Date());
  }

  /**
   * The expiry job: every open session past its time is closed and its transfer, if still
   * waiting for funds, goes back to READY_TO_FUND. One transaction per session, so one
   * failure does not hold back the others. Returns how many sessions it closed.
   */
  async expireDueSessions(now = new Date()): Promise<number> {
    let closed = 0;
    const failed = new Set<string>();
    for (;;) {
      const due = (await this.#repo.listDue(now, 100)).filter((s) => !failed.has(s.id));
      if (!due.length) return closed;
      for (const session of due) {
        try {
          if (await this.#expireOne(session.organization_id, session.transfer_id, session.id, now)) closed++;
        } catch (err) {
          failed.add(session.id);
          this.#log?.warn({ err, fundingSessionId: session.id, transferId: session.transfer_id }, 'could not expire funding session; the next run retries');
        }
      }
      if (failed.size && due.every((s) => failed.has(s.id))) return closed;
    }
  }

  async #expireOne(organizationId: string, transferId: string, sessionId: string, now: Date): Promise<boolean> {
    const transfers = this.#transfers();
    return this.#db.transaction().execute(async (trx) => {
      await this.#repo.lockTransfer(trx, transferId);
      const session = await this.#repo.findSession(sessionId, trx);
      if (!session || session.status !== 'ACTIVE' || session.expires_at > now) return false;
      const { status } = await transfers.getForFunding(organizationId, transferId, trx);
      // The transfer moves first, then the session: the order the transfer engine locks them in.
      if (status === 'AWAITING_FUNDS') {
        await transfers.transition(trx, { organizationId, transferId, to: 'READY_TO_FUND', reason: SESSION_EXPIRED_REASON, actor: { system: 'funding.expire-sessions' } });
      }
      await this.#repo.close(trx, sessionId, FUNDED.has(status) ? 'COMPLETED' : 'EXPIRED', now);
      return true;
    });
  }

  /**
   * Stores a proof of payment streamed from the client. The transfer is checked first, so nothing
   * is written for a transfer the caller cannot see. The transfer's status is left alone.
   */
  async recordProof(request: {
    organizationId: string;
    transferId: string;
    /** Opens the upload's file stream; called only once the transfer is known to be visible. */
    openUpload: () => Promise<{ fileName: string | undefined; file: Readable }>;
    actor?: Actor;
  }): Promise<FundingProof> {
    await this.#transfers().getForFunding(request.organizationId, request.transferId);
    const upload = await request.openUpload();
    let received;
    try {
      received = await this.#files.receive(upload.file, PROOF_MAX_BYTES);
    } catch (err) {
      throw proofError(err);
    }
    const id = newId();
    let storagePath: string | null = null;
    try {
      storagePath = await this.#files.keep(received, id);
      const open = await this.#repo.findActiveInOrganization(request.organizationId, request.transferId);
      const row = await this.#repo.insertProof({
        id,
        organization_id: request.organizationId,
        transfer_id: request.transferId,
        funding_session_id: open?.id ?? null,
        file_name: cleanFileName(upload.fileName, received.contentType),
        content_type: received.contentType,
        size_bytes: received.sizeBytes,
        sha256: received.sha256,
        storage_path: storagePath,
        uploaded_by_user_id: request.actor?.userId ?? null,
        uploaded_by_api_key_id: request.actor?.apiKeyId ?? null,
      });
      return toProof(row);
    } catch (err) {
      if (storagePath) await this.#files.remove(storagePath);
      else await this.#files.discard(received.tempPath);
      throw err;
    }
  }
}

// The 413 and 415 answers are sent before the rest of the upload is read; closing the connection
// stops the client sending what would only be discarded.
function proofError(err: unknown): unknown {
  const close = { headers: { connection: 'close' } };
  if (err instanceof ProofTooLarge) return new ApiError(413, 'file_too_large', `A funding proof may be at most ${PROOF_MAX_BYTES / (1024 * 1024)} MB`, close);
  if (err instanceof UnsupportedProofType) return new ApiError(415, 'unsupported_file_type', 'A funding proof must be a PDF, JPEG or PNG file (recognised by its content, not its name)', close);
  if (err instanceof EmptyProof) return validationError([{ path: 'file', message: 'is empty' }]);
  if (err instanceof UploadInterrupted) return new ApiError(400, 'invalid_multipart', `The upload broke off before the file ended: ${err.message}`, close);
  return err;
}

/** The client's file name, reduced to a plain base name (it is only ever displayed). */
function cleanFileName(raw: string | undefined, contentType: string): string {
  const base = path.basename((raw ?? '').replace(/\\/g, '/')).replace(/[\x00-\x1f\x7f]/g, '').trim().slice(0, 255);
  return base || `proof.${contentType.split('/')[1]}`;
}

export function toSession(row: FundingSessionRow): FundingSession {
  return {
    id: row.id,
    transferId: row.transfer_id,
    status: row.status,
    instructions: row.instructions,
    expiresAt: iso(row.expires_at),
    createdAt: iso(row.created_at),
  };
}

function toProof(row: FundingProofRow): FundingProof {
  return {
    id: row.id,
    transferId: row.transfer_id,
    fileName: row.file_name,
    contentType: row.content_type,
    sizeBytes: row.size_bytes,
    sha256: row.sha256,
    uploadedAt: iso(row.uploaded_at),
  };
}
