// Entities: the people and businesses an organization moves money for (DECISIONS.md §3).
// An entity must be onboarded (ACTIVE) before it can be quoted or paid for.
import type { Kysely, RawBuilder } from 'kysely';
import iso3166 from 'iso-3166-1';
import type { Environment } from '../platform/config.ts';
import { ApiError, notFound, unprocessable, validationError } from '../platform/http/errors.ts';
import type { FieldProblem } from '../platform/http/errors.ts';
import { decodeCursor, pageOf } from '../platform/http/pagination.ts';
import { iso } from '../platform/time.ts';
import { EntityRepository } from './repository.ts';
import type { EntityFilter, EntityRow, EntityStatus, EntityType } from './repository.ts';
import { SANDBOX_MAGIC_NAMES } from './schemas.ts';
import type { CreateEntityInput } from './schemas.ts';
import { isUuid, newId } from '../platform/ids.ts';

export type { EntityStatus, EntityType };

export interface PostalAddress {
  line1: string;
  line2?: string;
  city: string;
  region?: string;
  postalCode?: string;
  country: string;
}

export interface Entity {
  id: string;
  type: EntityType;
  status: EntityStatus;
  statusReason: string | null;
  firstName?: string;
  lastName?: string;
  dateOfBirth?: string;
  legalName?: string;
  tradingName?: string;
  registrationNumber?: string;
  email?: string;
  country: string;
  address?: PostalAddress;
  createdAt: string;
  updatedAt: string;
}

/** The onboarding state machine: the only moves an entity's status may make. */
const STATUS_MOVES: Record<EntityStatus, readonly EntityStatus[]> = {
  PENDING: ['ACTIVE', 'REJECTED'],
  ACTIVE: [],
  REJECTED: [],
};

const toEntity = (row: EntityRow): Entity => ({
  id: row.id,
  type: row.type,
  status: row.status,
  statusReason: row.status_reason,
  ...(row.profile as Partial<Entity>),
  country: row.country,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
});

/** Field problems a JSON Schema cannot see: real country codes and a birth date in the past. */
function identityProblems(input: CreateEntityInput, today: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const isCountry = (code: string) => iso3166.whereAlpha2(code) !== undefined && code === code.toUpperCase();
  if (!isCountry(input.country)) problems.push({ path: 'country', message: 'is not an ISO 3166-1 alpha-2 country code' });
  if (input.address && !isCountry(input.address.country)) problems.push({ path: 'address.country', message: 'is not an ISO 3166-1 alpha-2 country code' });
  if (input.type === 'INDIVIDUAL' && input.dateOfBirth && input.dateOfBirth >= today) problems.push({ path: 'dateOfBirth', message: 'must be in the past' });
  return problems;
}

export class EntityService {
  readonly #repo: EntityRepository;
  readonly #env: Environment;

  constructor(db: Kysely<any>, env: Environment) {
    this.#repo = new EntityRepository(db);
    this.#env = env;
  }

  async create(organizationId: string, input: CreateEntityInput): Promise<Entity> {
    const problems = identityProblems(input, new Date().toISOString().slice(0, 10));
    if (problems.length) throw validationError(problems);
    const { type, country, ...profile } = input;
    const status = this.#initialStatus(input);
    const row = await this.#repo.insert({
      id: newId(),
      organization_id: organizationId,
      type,
      status,
      status_reason: status === 'REJECTED' ? 'Rejected by the sandbox (magic value "Rejected")' : null,
      country,
      profile,
    });
    return toEntity(row);
  }

  /** The entity, or 404 not_found when it does not exist in this organization. */
  async get(organizationId: string, id: string): Promise<Entity> {
    const row = isUuid(id) ? await this.#repo.find(organizationId, id) : undefined;
    if (!row) throw notFound('Entity');
    return toEntity(row);
  }

  /** The entity if it may be quoted and paid for; 404 when unknown, 422 entity_not_onboarded when not ACTIVE. */
  /**
   * requireActive() as a condition of someone else's write, for a request that trusts it without
   * reading the entity (platform/db/guard.ts); `refs` name the write's columns.
   */
  activeCondition(refs: { id: RawBuilder<unknown>; organizationId: RawBuilder<unknown> }): RawBuilder<boolean> {
    return this.#repo.activeCondition(refs);
  }

  async requireActive(organizationId: string, id: string): Promise<Entity> {
    const entity = await this.get(organizationId, id);
    if (entity.status !== 'ACTIVE') {
      throw unprocessable('entity_not_onboarded', `Entity ${entity.id} is ${entity.status}; only an ACTIVE (onboarded) entity can be quoted or paid for`);
    }
    return entity;
  }

  async list(organizationId: string, query: { limit: number; cursor?: string | undefined; status?: EntityStatus | undefined; type?: EntityType | undefined }) {
    return this.#page({ organizationId, status: query.status, type: query.type }, query.limit, query.cursor, toEntity);
  }

  /** The operator's queue across organizations (PENDING unless another status is asked for). */
  async listForReview(query: { limit: number; cursor?: string | undefined; status?: EntityStatus | undefined }) {
    return this.#page({ status: query.status ?? 'PENDING' }, query.limit, query.cursor, (row) => ({ ...toEntity(row), organizationId: row.organization_id }));
  }

  /** Operator decisions act across organizations. */
  async approve(id: string, reviewerUserId: string | null): Promise<Entity & { organizationId: string }> {
    return this.#decide(id, 'ACTIVE', null, reviewerUserId);
  }

  async reject(id: string, reviewerUserId: string | null, reason: string | null): Promise<Entity & { organizationId: string }> {
    return this.#decide(id, 'REJECTED', reason, reviewerUserId);
  }

  #initialStatus(input: CreateEntityInput): EntityStatus {
    if (this.#env !== 'sandbox') return 'PENDING';
    const name = (input.type === 'INDIVIDUAL' ? input.lastName : input.legalName).trim().toLowerCase();
    for (const [magic, status] of Object.entries(SANDBOX_MAGIC_NAMES)) if (magic.toLowerCase() === name) return status;
    return 'ACTIVE';
  }

  async #decide(id: string, to: EntityStatus, reason: string | null, reviewerUserId: string | null) {
    const row = isUuid(id) ? await this.#repo.find(null, id) : undefined;
    if (!row) throw notFound('Entity');
    if (!STATUS_MOVES[row.status].includes(to)) {
      throw new ApiError(409, 'invalid_status_transition', `Entity ${id} is ${row.status} and cannot become ${to}`);
    }
    const moved = await this.#repo.moveStatus(id, row.status, to, { reason, reviewerUserId });
    if (!moved) throw new ApiError(409, 'invalid_status_transition', `Entity ${id} changed status while being reviewed; read it again`);
    return { ...toEntity(moved), organizationId: moved.organization_id };
  }

  async #page<T extends { id: string; createdAt: string }>(filter: EntityFilter, limit: number, cursor: string | undefined, map: (row: EntityRow) => T) {
    const { rows, total } = await this.#repo.list(filter, limit, decodeCursor(cursor));
    const { page, nextCursor } = pageOf(rows.map(map), limit);
    return { data: page, meta: { total, nextCursor } };
  }
}
