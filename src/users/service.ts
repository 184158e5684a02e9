// Users belong to one organization. Credentials (password hashes) never leave this domain
// except to the auth service for sign-in.
import type { Kysely } from 'kysely';
import { ApiError } from '../platform/http/errors.ts';
import { decodeCursor, pageOf } from '../platform/http/pagination.ts';
import { iso } from '../platform/time.ts';
import { UserRepository } from './repository.ts';
import type { UserRow } from './repository.ts';
import { newId } from '../platform/ids.ts';

export const ROLES = ['OWNER', 'ADMIN', 'DEVELOPER', 'VIEWER', 'SERVICE_OPS'] as const;
export type Role = (typeof ROLES)[number];

/** The User resource exactly as SPEC.md's table lists it. */
export interface User {
  id: string;
  email: string;
  fullName: string;
  roles: Role[];
  status: 'ACTIVE' | 'DISABLED';
  createdAt: string;
}

export interface UserWithCredentials {
  user: User;
  organizationId: string;
  passwordHash: string;
}

export const toUser = (row: UserRow): User => ({
  id: row.id,
  email: row.email,
  fullName: row.full_name,
  roles: row.roles as Role[],
  status: row.status,
  createdAt: iso(row.created_at),
});

export class UserService {
  readonly #repo: UserRepository;
  constructor(db: Kysely<any>) {
    this.#repo = new UserRepository(db);
  }

  async create(input: { organizationId: string; email: string; fullName: string; passwordHash: string; roles: Role[] }, trx?: Kysely<any>): Promise<User> {
    try {
      const row = await this.#repo.insert(
        { id: newId(), organization_id: input.organizationId, email: input.email.toLowerCase(), full_name: input.fullName, password_hash: input.passwordHash, roles: input.roles },
        trx,
      );
      return toUser(row);
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new ApiError(409, 'email_taken', 'A user with this email already exists');
      throw err;
    }
  }

  async findForSignIn(email: string): Promise<UserWithCredentials | null> {
    const row = await this.#repo.findByEmail(email);
    return row ? { user: toUser(row), organizationId: row.organization_id, passwordHash: row.password_hash } : null;
  }

  /** The user behind a bearer token; null if it no longer exists. */
  async findActive(id: string): Promise<{ user: User; organizationId: string } | null> {
    const row = await this.#repo.findById(id);
    if (!row || row.status !== 'ACTIVE') return null;
    return { user: toUser(row), organizationId: row.organization_id };
  }

  async get(organizationId: string, id: string): Promise<User> {
    const row = await this.#repo.findInOrganization(organizationId, id);
    if (!row) throw new ApiError(404, 'not_found', 'User not found');
    return toUser(row);
  }

  async list(organizationId: string, limit: number, cursor?: string) {
    const { rows, total } = await this.#repo.list(organizationId, limit, decodeCursor(cursor));
    const { page, nextCursor } = pageOf(rows.map(toUser), limit);
    return { data: page, meta: { total, nextCursor } };
  }
}
