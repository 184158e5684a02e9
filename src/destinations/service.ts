// Saved destinations: fiat accounts and crypto wallets (SPEC.md "Saved destinations",
// DECISIONS.md §3). Instructions live in immutable versions; an edit that changes them makes
// version n+1 under the same id, so a transfer can keep the exact instructions it was created with.
import type { Kysely, RawBuilder } from 'kysely';
import { RecentMemory } from '../platform/recent.ts';
import type { Environment } from '../platform/config.ts';
import { ApiError, notFound, unprocessable, validationError } from '../platform/http/errors.ts';
import { decodeCursor, decodeKeyCursor, encodeKeyCursor, pageOf } from '../platform/http/pagination.ts';
import { iso } from '../platform/time.ts';
import type { FiatMethod } from '../providers/adapter.ts';
import type { EntityService } from '../entities/service.ts';
import { DestinationRepository } from './repository.ts';
import type { CurrentRow, DestinationKind, DestinationRow, VersionContent, VersionRow } from './repository.ts';
import { RailSchemaRegistry } from './rail-schemas.ts';
import { MAX_VERSION } from './schemas.ts';
import type { ChainSchema, FiatRailKey, FiatRailSchema } from './rail-schemas.ts';
import { isUuid, newId } from '../platform/ids.ts';

export type { DestinationKind };
export type Relationship = 'SELF' | 'THIRD_PARTY';

/** The part of the rail directory (RailService) destinations need: which rails this environment offers. */
export interface RailDirectory {
  hasFiatRail(rail: { country: string; currency: string; method: string }): boolean | Promise<boolean>;
  hasCryptoRail(rail: { blockchain: string; asset: string }): boolean | Promise<boolean>;
  cryptoRails(): Array<{ blockchain: string; asset: string }>;
}

export interface CreatedBy {
  type: 'USER' | 'API_KEY';
  id: string;
}

/** Who is acting: the organization, and the user or API key recorded on the versions they create. */
export interface Actor {
  organizationId: string;
  createdBy: CreatedBy;
}

interface VersionStamp {
  version: number;
  versionCreatedAt: string;
  versionCreatedBy: CreatedBy;
  createdAt: string;
  updatedAt: string;
}

export interface FiatAccountInstructions {
  relationship: Relationship;
  rail: { country: string; currency: string; method: FiatMethod };
  details: Record<string, unknown>;
  beneficiary: Record<string, unknown>;
}

export interface CryptoWalletInstructions {
  relationship: Relationship;
  blockchain: string;
  asset: string;
  address: string;
  memo: string | null;
  tag: string | null;
}

export type FiatAccount = { id: string; entityId: string; nickname: string | null } & FiatAccountInstructions & VersionStamp;
export type CryptoWallet = { id: string; entityId: string; nickname: string | null } & CryptoWalletInstructions & VersionStamp;
export type FiatAccountVersion = { id: string; version: number; entityId: string; createdAt: string; createdBy: CreatedBy } & FiatAccountInstructions;
export type CryptoWalletVersion = { id: string; version: number; entityId: string; createdAt: string; createdBy: CreatedBy } & CryptoWalletInstructions;

export type CreateFiatAccountInput = Omit<FiatAccountInstructions, 'rail'> & { entityId: string; rail: FiatRailKey; nickname?: string | undefined };
export type UpdateFiatAccountInput = Partial<Omit<FiatAccountInstructions, 'rail'> & { rail: FiatRailKey }> & { nickname?: string | null | undefined };
export type CreateCryptoWalletInput = Omit<CryptoWalletInstructions, 'memo' | 'tag'> & {
  entityId: string;
  memo?: string | null | undefined;
  tag?: string | null | undefined;
  nickname?: string | undefined;
};
export type UpdateCryptoWalletInput = Partial<CryptoWalletInstructions> & { nickname?: string | null | undefined };

export interface DestinationRef {
  type: DestinationKind;
  id: string;
  /** A past version; the current one when absent. */
  version?: number;
}

/** What a transfer stores about its destination: the exact instructions it was created with. */
export interface DestinationSnapshot {
  type: DestinationKind;
  id: string;
  version: number;
  relationship: Relationship;
  entityId: string;
  rail: { type: 'FIAT'; country: string; currency: string; method: FiatMethod } | { type: 'CRYPTO'; blockchain: string; asset: string };
  instructions: { details: Record<string, unknown>; beneficiary: Record<string, unknown> } | { address: string; memo: string | null; tag: string | null };
}

type Page<T> = { data: T[]; meta: { total: number; nextCursor: string | null } };

const MAX_EDIT_ATTEMPTS = 3;
const NOUN: Record<DestinationKind, string> = { FIAT_ACCOUNT: 'Fiat account', CRYPTO_WALLET: 'Crypto wallet' };

const createdByOf = (row: Pick<VersionRow, 'created_by_type' | 'created_by_id'>): CreatedBy => ({ type: row.created_by_type, id: row.created_by_id });

/** JSON with sorted keys, so two contents compare equal whatever order jsonb gave their keys. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const sameContent = (a: Omit<VersionContent, 'created_by_type' | 'created_by_id'>, b: Omit<VersionContent, 'created_by_type' | 'created_by_id'>) =>
  canonical([a.relationship, a.rail, a.instructions]) === canonical([b.relationship, b.rail, b.instructions]);

// Each kind's version contents as the API shows them.
const fiatInstructions = (v: Pick<VersionRow, 'relationship' | 'rail' | 'instructions'>): FiatAccountInstructions => ({
  relationship: v.relationship,
  rail: v.rail as FiatAccountInstructions['rail'],
  details: (v.instructions as { details: Record<string, unknown> }).details,
  beneficiary: (v.instructions as { beneficiary: Record<string, unknown> }).beneficiary,
});

const walletInstructions = (v: Pick<VersionRow, 'relationship' | 'rail' | 'instructions'>): CryptoWalletInstructions => {
  const rail = v.rail as { blockchain: string; asset: string };
  const i = v.instructions as { address: string; memo: string | null; tag: string | null };
  return { relationship: v.relationship, blockchain: rail.blockchain, asset: rail.asset, address: i.address, memo: i.memo, tag: i.tag };
};

const isVersion = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_VERSION;
const afterVersion = (cursor: string | undefined): number => (cursor ? decodeKeyCursor(cursor, 'v', isVersion) : 0);

export class DestinationService {
  readonly #repo: DestinationRepository;
  readonly #entities: EntityService;
  readonly #rails: RailDirectory;
  readonly #schemas: RailSchemaRegistry;
  // The current row of each destination read lately: what a quote and then its transfer read
  // again moments later. Only ever used under a guard on its version (currentVersionCondition).
  readonly #recent = new RecentMemory<{ row: CurrentRow; snapshot?: DestinationSnapshot }>({ capacity: 10_000, ttlMs: 10 * 60_000 });

  constructor(deps: { db: Kysely<any>; entities: EntityService; rails: RailDirectory; env: Environment }) {
    this.#repo = new DestinationRepository(deps.db);
    this.#entities = deps.entities;
    this.#rails = deps.rails;
    this.#schemas = new RailSchemaRegistry(deps.env);
  }

  // --- fiat accounts ---------------------------------------------------------------------------

  async createFiatAccount(actor: Actor, input: CreateFiatAccountInput): Promise<FiatAccount> {
    const id = await this.#create(actor, 'FIAT_ACCOUNT', input, () => this.#fiatContent(input));
    return this.getFiatAccount(actor.organizationId, id);
  }

  async updateFiatAccount(actor: Actor, id: string, patch: UpdateFiatAccountInput): Promise<FiatAccount> {
    const touchesInstructions = patch.rail !== undefined || patch.details !== undefined || patch.beneficiary !== undefined || patch.relationship !== undefined;
    await this.#update(actor, 'FIAT_ACCOUNT', id, patch.nickname, touchesInstructions, (current) => {
      const was = fiatInstructions(current);
      return this.#fiatContent({
        relationship: patch.relationship ?? was.relationship,
        rail: patch.rail ?? was.rail,
        details: patch.details ?? was.details,
        beneficiary: patch.beneficiary ?? was.beneficiary,
      });
    });
    return this.getFiatAccount(actor.organizationId, id);
  }

  /** The current fiat account (404 for unknown ids and other organizations' ids). */
  async getFiatAccount(organizationId: string, id: string): Promise<FiatAccount> {
    return this.#toFiatAccount(await this.#current(organizationId, 'FIAT_ACCOUNT', id));
  }

  async listFiatAccounts(organizationId: string, query: { limit: number; cursor?: string | undefined; entityId?: string | undefined }): Promise<Page<FiatAccount>> {
    return this.#list(organizationId, 'FIAT_ACCOUNT', query, (row) => this.#toFiatAccount(row));
  }

  async getFiatAccountVersion(organizationId: string, id: string, version: number): Promise<FiatAccountVersion> {
    const { destination, version: row } = await this.#version(organizationId, 'FIAT_ACCOUNT', id, version);
    return { ...this.#versionHeader(destination, row), ...fiatInstructions(row) };
  }

  async listFiatAccountVersions(organizationId: string, id: string, query: { limit: number; cursor?: string | undefined }): Promise<Page<FiatAccountVersion>> {
    return this.#listVersions(organizationId, 'FIAT_ACCOUNT', id, query, (d, v) => ({ ...this.#versionHeader(d, v), ...fiatInstructions(v) }));
  }

  /** The JSON Schemas of `details` and `beneficiary` on a fiat rail of this environment. */
  async fiatRailSchema(rail: FiatRailKey): Promise<FiatRailSchema> {
    await this.#requireFiatRail(rail, 'query');
    return this.#schemas.fiat(rail)!;
  }

  // --- crypto wallets --------------------------------------------------------------------------

  async createCryptoWallet(actor: Actor, input: CreateCryptoWalletInput): Promise<CryptoWallet> {
    const id = await this.#create(actor, 'CRYPTO_WALLET', input, () => this.#walletContent({ ...input, memo: input.memo ?? null, tag: input.tag ?? null }));
    return this.getCryptoWallet(actor.organizationId, id);
  }

  async updateCryptoWallet(actor: Actor, id: string, patch: UpdateCryptoWalletInput): Promise<CryptoWallet> {
    const fields = ['relationship', 'blockchain', 'asset', 'address', 'memo', 'tag'] as const;
    const touchesInstructions = fields.some((f) => patch[f] !== undefined);
    await this.#update(actor, 'CRYPTO_WALLET', id, patch.nickname, touchesInstructions, (current) => {
      const was = walletInstructions(current);
      const merged = Object.fromEntries(fields.map((f) => [f, patch[f] === undefined ? was[f] : patch[f]])) as unknown as CryptoWalletInstructions;
      return this.#walletContent(merged);
    });
    return this.getCryptoWallet(actor.organizationId, id);
  }

  /** The current crypto wallet (404 for unknown ids and other organizations' ids). */
  async getCryptoWallet(organizationId: string, id: string): Promise<CryptoWallet> {
    return this.#toCryptoWallet(await this.#current(organizationId, 'CRYPTO_WALLET', id));
  }

  async listCryptoWallets(organizationId: string, query: { limit: number; cursor?: string | undefined; entityId?: string | undefined }): Promise<Page<CryptoWallet>> {
    return this.#list(organizationId, 'CRYPTO_WALLET', query, (row) => this.#toCryptoWallet(row));
  }

  async getCryptoWalletVersion(organizationId: string, id: string, version: number): Promise<CryptoWalletVersion> {
    const { destination, version: row } = await this.#version(organizationId, 'CRYPTO_WALLET', id, version);
    return { ...this.#versionHeader(destination, row), ...walletInstructions(row) };
  }

  async listCryptoWalletVersions(organizationId: string, id: string, query: { limit: number; cursor?: string | undefined }): Promise<Page<CryptoWalletVersion>> {
    return this.#listVersions(organizationId, 'CRYPTO_WALLET', id, query, (d, v) => ({ ...this.#versionHeader(d, v), ...walletInstructions(v) }));
  }

  /** Blockchains a wallet can be saved on here, with the assets the rail directory offers on each. */
  async cryptoWalletSchemas(): Promise<{ blockchains: Array<ChainSchema & { assets: string[] }> }> {
    const assets = new Map<string, string[]>();
    for (const rail of this.#rails.cryptoRails()) assets.set(rail.blockchain, [...(assets.get(rail.blockchain) ?? []), rail.asset]);
    const blockchains = this.#schemas.chains().flatMap((chain) => {
      const offered = assets.get(chain.blockchain);
      return offered ? [{ blockchain: chain.blockchain, assets: offered, addressFormat: chain.addressFormat, memo: chain.memo, tag: chain.tag, schema: chain.schema }] : [];
    });
    return { blockchains };
  }

  // --- for the transfer engine -----------------------------------------------------------------

  /** The destination's instructions as a transfer stores them (current version unless one is named). */
  async snapshot(organizationId: string, ref: DestinationRef): Promise<DestinationSnapshot> {
    if (ref.type !== 'FIAT_ACCOUNT' && ref.type !== 'CRYPTO_WALLET') throw notFound('Destination');
    const { destination, version } =
      ref.version === undefined
        ? await this.#current(organizationId, ref.type, ref.id).then((row) => ({ destination: row, version: row }))
        : await this.#version(organizationId, ref.type, ref.id, ref.version);
    return snapshotOf(ref.type, destination, version);
  }

  /**
   * The snapshot of the destination's current version as this process last read it, if it did
   * lately: for a write that makes currentVersionCondition() its guard, never on its own.
   */
  recentSnapshot(organizationId: string, ref: { type: 'FIAT_ACCOUNT' | 'CRYPTO_WALLET'; id: string }): DestinationSnapshot | undefined {
    const seen = this.#recent.get(recentKey(organizationId, ref.type, ref.id));
    if (!seen) return undefined;
    // Made once per row seen, and frozen: every transfer on it shares the one snapshot.
    seen.snapshot ??= deepFreeze(snapshotOf(ref.type, seen.row, seen.row));
    return seen.snapshot;
  }

  /** The fiat account as this process last read it, if it did lately; under the same guard as recentSnapshot(). */
  recentFiatAccount(organizationId: string, id: string): FiatAccount | undefined {
    const seen = this.#recent.get(recentKey(organizationId, 'FIAT_ACCOUNT', id));
    return seen && this.#toFiatAccount(seen.row);
  }

  /** The crypto wallet as this process last read it, if it did lately; under the same guard as recentSnapshot(). */
  recentCryptoWallet(organizationId: string, id: string): CryptoWallet | undefined {
    const seen = this.#recent.get(recentKey(organizationId, 'CRYPTO_WALLET', id));
    return seen && this.#toCryptoWallet(seen.row);
  }

  /**
   * A guard's condition (platform/db/guard.ts): the destination is the organization's, of this
   * kind, and still at this version (a version's content never changes, so a snapshot of it read
   * earlier is still the destination's).
   */
  currentVersionCondition(refs: { kind: RawBuilder<unknown>; id: RawBuilder<unknown>; organizationId: RawBuilder<unknown>; version: RawBuilder<unknown> }): RawBuilder<boolean> {
    return this.#repo.currentVersionCondition(refs);
  }

  // --- shared machinery ------------------------------------------------------------------------

  async #fiatContent(input: FiatAccountInstructions | (Omit<FiatAccountInstructions, 'rail'> & { rail: FiatRailKey })) {
    const rail = { country: input.rail.country, currency: input.rail.currency, method: input.rail.method };
    await this.#requireFiatRail(rail, 'rail');
    const instructions = this.#schemas.validateFiat(rail, { details: input.details, beneficiary: input.beneficiary });
    return { relationship: input.relationship, rail, instructions };
  }

  async #walletContent(input: CryptoWalletInstructions) {
    const { blockchain, asset } = input;
    if (!(await this.#rails.hasCryptoRail({ blockchain, asset })) || !this.#schemas.chain(blockchain)) {
      throw unprocessable('unsupported_route', `${asset} on ${blockchain} is not a crypto rail of this environment (see GET /v1/rails and GET /v1/crypto-wallets/schemas)`);
    }
    const instructions = this.#schemas.validateWallet(blockchain, { address: input.address, memo: input.memo, tag: input.tag });
    return { relationship: input.relationship, rail: { blockchain, asset }, instructions };
  }

  /** `at` is where the rail came from, for field paths: the body's `rail` or the query string. */
  async #requireFiatRail(rail: FiatRailKey, at: 'rail' | 'query'): Promise<void> {
    const problems = this.#schemas.railProblems(rail, at);
    if (problems.length) throw validationError(problems);
    if (!(await this.#rails.hasFiatRail(rail)) || !this.#schemas.fiat(rail)) {
      throw unprocessable('unsupported_route', `${rail.country}/${rail.currency}/${rail.method} is not a fiat rail of this environment (see GET /v1/rails)`);
    }
  }

  async #create(actor: Actor, kind: DestinationKind, input: { entityId: string; nickname?: string | undefined }, content: () => Promise<Omit<VersionContent, 'created_by_type' | 'created_by_id'>>): Promise<string> {
    await this.#entities.get(actor.organizationId, input.entityId);
    const version = await content();
    const id = newId();
    await this.#repo.insert(
      { id, organization_id: actor.organizationId, entity_id: input.entityId, kind, nickname: input.nickname ?? null },
      { ...version, created_by_type: actor.createdBy.type, created_by_id: actor.createdBy.id },
    );
    return id;
  }

  /**
   * Validates the edited instructions outside any transaction (the rail directory may read the
   * database), then writes them only if nobody changed the destination meanwhile; else tries again.
   */
  async #update(
    actor: Actor,
    kind: DestinationKind,
    id: string,
    nickname: string | null | undefined,
    touchesInstructions: boolean,
    content: (current: CurrentRow) => Promise<Omit<VersionContent, 'created_by_type' | 'created_by_id'>>,
  ): Promise<void> {
    for (let attempt = 0; attempt < MAX_EDIT_ATTEMPTS; attempt++) {
      const current = await this.#current(actor.organizationId, kind, id);
      const next = touchesInstructions ? await content(current) : null;
      const changed = next && !sameContent(next, current) ? { ...next, created_by_type: actor.createdBy.type, created_by_id: actor.createdBy.id } : undefined;
      if (!changed && nickname === undefined) return;
      if (await this.#repo.update(id, current.version, { ...(changed ? { content: changed } : {}), ...(nickname !== undefined ? { nickname } : {}) })) return;
    }
    throw new ApiError(409, 'concurrent_update', `${NOUN[kind]} ${id} is being changed by another request; read it again and retry`);
  }

  async #current(organizationId: string, kind: DestinationKind, id: string): Promise<CurrentRow> {
    const row = isUuid(id) ? await this.#repo.findCurrent(organizationId, kind, id) : undefined;
    if (!row) throw notFound(NOUN[kind]);
    this.#recent.set(recentKey(organizationId, kind, id), { row });
    return row;
  }

  async #version(organizationId: string, kind: DestinationKind, id: string, version: number) {
    const found = isUuid(id) && Number.isInteger(version) ? await this.#repo.findVersion(organizationId, kind, id, version) : undefined;
    if (!found) throw notFound(`${NOUN[kind]} version`);
    return found;
  }

  async #list<T extends { id: string; createdAt: string }>(organizationId: string, kind: DestinationKind, query: { limit: number; cursor?: string | undefined; entityId?: string | undefined }, map: (row: CurrentRow) => T): Promise<Page<T>> {
    // A filter naming an entity the organization does not have is 404, as reading it would be.
    if (query.entityId) await this.#entities.get(organizationId, query.entityId);
    const { rows, total } = await this.#repo.list(organizationId, kind, { entityId: query.entityId }, query.limit, decodeCursor(query.cursor));
    const { page, nextCursor } = pageOf(rows.map(map), query.limit);
    return { data: page, meta: { total, nextCursor } };
  }

  async #listVersions<T extends { version: number }>(organizationId: string, kind: DestinationKind, id: string, query: { limit: number; cursor?: string | undefined }, map: (d: DestinationRow, v: VersionRow) => T): Promise<Page<T>> {
    const found = isUuid(id) ? await this.#repo.listVersions(organizationId, kind, id, query.limit, afterVersion(query.cursor)) : undefined;
    if (!found) throw notFound(NOUN[kind]);
    const page = found.rows.slice(0, query.limit).map((v) => map(found.destination, v));
    const last = page[page.length - 1];
    return { data: page, meta: { total: found.destination.version, nextCursor: found.rows.length > query.limit && last ? encodeKeyCursor('v', last.version) : null } };
  }

  #versionHeader(destination: DestinationRow, v: VersionRow) {
    return { id: destination.id, version: v.version, entityId: destination.entity_id, createdAt: iso(v.created_at), createdBy: createdByOf(v) };
  }

  #stamp(row: CurrentRow) {
    return {
      id: row.id,
      entityId: row.entity_id,
      nickname: row.nickname,
      version: row.version,
      versionCreatedAt: iso(row.version_created_at),
      versionCreatedBy: createdByOf(row),
      createdAt: iso(row.created_at),
      updatedAt: iso(row.updated_at),
    };
  }

  #toFiatAccount(row: CurrentRow): FiatAccount {
    return { ...this.#stamp(row), ...fiatInstructions(row) };
  }

  #toCryptoWallet(row: CurrentRow): CryptoWallet {
    return { ...this.#stamp(row), ...walletInstructions(row) };
  }
}

/** A version's instructions as a transfer stores them. */
function snapshotOf(type: 'FIAT_ACCOUNT' | 'CRYPTO_WALLET', destination: DestinationRow, version: Pick<VersionRow, 'version' | 'relationship' | 'rail' | 'instructions'>): DestinationSnapshot {
  const base = { type, id: destination.id, version: version.version, relationship: version.relationship, entityId: destination.entity_id };
  if (type === 'FIAT_ACCOUNT') {
    const f = fiatInstructions(version);
    return structuredClone({ ...base, rail: { type: 'FIAT' as const, ...f.rail }, instructions: { details: f.details, beneficiary: f.beneficiary } });
  }
  const w = walletInstructions(version);
  return structuredClone({ ...base, rail: { type: 'CRYPTO' as const, blockchain: w.blockchain, asset: w.asset }, instructions: { address: w.address, memo: w.memo, tag: w.tag } });
}

const recentKey = (organizationId: string, kind: DestinationKind, id: string) => `${organizationId}/${kind}/${id}`;

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
