// Who is calling, and what may they do. Two credentials (SPEC.md "Authentication"): an API key in
// X-API-Key, or a user's bearer JWT, Corridor's own or, when configured, an external identity
// provider's. Failures answer exactly SPEC.md's error table.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Environment } from '../platform/config.ts';
import { ApiError } from '../platform/http/errors.ts';
import { decodeCursor, pageOf } from '../platform/http/pagination.ts';
import { iso } from '../platform/time.ts';
import { FEATURES } from '../organizations/service.ts';
import type { Feature, OrganizationService } from '../organizations/service.ts';
import type { Role, User, UserService } from '../users/service.ts';
import { SCOPES, scopesForRoles } from './permissions.ts';
import type { Scope } from './permissions.ts';
import { burnPasswordCheck, hashPassword, verifyPassword } from './passwords.ts';
import { AuthRepository } from './repository.ts';
import type { ApiKeyCredential, ApiKeyRow } from './repository.ts';
import { RecentMemory } from '../platform/recent.ts';
import { ACCESS_TOKEN_TTL_SECONDS, TokenIssuer } from './tokens.ts';
import { ExternalIdentityProvider } from './external-idp.ts';
import { newId } from '../platform/ids.ts';

export interface Principal {
  kind: 'user' | 'api_key';
  organizationId: string;
  userId: string | null;
  apiKeyId: string | null;
  roles: Role[];
  scopes: Set<Scope>;
  features: Set<Feature>;
  /** A rate-limit bucket: one per credential. */
  credentialId: string;
}

export interface ApiKeyView {
  id: string;
  name: string;
  scopes: Scope[];
  prefix: string;
  lastFour: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export const MISSING_CREDENTIALS = () => new ApiError(401, 'missing_credentials', 'Missing credentials');
export const UNAUTHORIZED = () => new ApiError(401, 'unauthorized', 'Unauthorized');
export const USER_TOKEN_REQUIRED = () => new ApiError(403, 'user_token_required', 'This endpoint only accepts a user token (Bearer JWT).');
export const AUTH_FAILURE = () => new ApiError(500, 'auth_failure', 'Authentication service unavailable');

const KEY_RANDOM_BYTES = 48; // 64 base64url characters: a 16-character lookup id and 288 secret bits
const LOOKUP_LENGTH = 16;

const sha256 = (value: string) => createHash('sha256').update(value).digest();

/**
 * How long a checked API key's row is kept: a client sends its key with every request, and
 * reading the row for each was one of the few round trips a request makes. A revocation takes
 * effect at once in the process that made it and within this long in every other process; a
 * change of the organization's features likewise.
 */
export const CREDENTIAL_MEMORY_MS = 1000;

function toApiKeyView(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes as Scope[],
    prefix: row.prefix,
    lastFour: row.last_four,
    createdAt: iso(row.created_at),
    lastUsedAt: row.last_used_at ? iso(row.last_used_at) : null,
    revokedAt: row.revoked_at ? iso(row.revoked_at) : null,
  };
}

export class AuthService {
  readonly #recentKeys = new RecentMemory<ApiKeyCredential>({ capacity: 10_000, ttlMs: CREDENTIAL_MEMORY_MS });
  readonly #db: Kysely<any>;
  readonly #repo: AuthRepository;
  readonly #tokens: TokenIssuer;
  readonly #idp: ExternalIdentityProvider | null;
  readonly #users: UserService;
  readonly #organizations: OrganizationService;
  readonly #env: Environment;
  readonly #keyPrefix: string;
  readonly #lastUsedWritten = new Map<string, number>();

  constructor(deps: {
    db: Kysely<any>;
    users: UserService;
    organizations: OrganizationService;
    env: Environment;
    /** An external identity provider (CORRIDOR_IDP_*); off unless all three are set. */
    idp?: { jwksUrl: string | null; issuer: string | null; audience: string | null };
  }) {
    this.#db = deps.db;
    this.#repo = new AuthRepository(deps.db);
    this.#tokens = new TokenIssuer(this.#repo, deps.env);
    const idp = deps.idp;
    this.#idp = idp?.jwksUrl && idp.issuer && idp.audience ? new ExternalIdentityProvider({ jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: idp.audience }) : null;
    this.#users = deps.users;
    this.#organizations = deps.organizations;
    this.#env = deps.env;
    this.#keyPrefix = deps.env === 'production' ? 'sk_live_' : 'sk_sandbox_';
    deps.organizations.onFeaturesChanged(() => this.#recentKeys.clear());
  }

  async init(): Promise<void> {
    await this.#tokens.init();
  }

  jwks() {
    return this.#tokens.jwks();
  }

  /**
   * Resolves the caller from its headers. Throws the SPEC.md error for a missing or bad
   * credential, and auth_failure when the credential store cannot be read: never lets through.
   */
  async authenticate(headers: { authorization?: string | undefined; apiKey?: string | undefined }): Promise<Principal> {
    const bearer = headers.authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
    if (!headers.apiKey && !headers.authorization) throw MISSING_CREDENTIALS();
    try {
      if (headers.apiKey) return await this.#authenticateApiKey(headers.apiKey);
      if (!bearer) throw UNAUTHORIZED();
      return await this.#authenticateBearer(bearer);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw AUTH_FAILURE();
    }
  }

  async #authenticateApiKey(presented: string): Promise<Principal> {
    if (!presented.startsWith(this.#keyPrefix) || presented.length !== this.#keyPrefix.length + 64) throw UNAUTHORIZED();
    const lookupId = presented.slice(this.#keyPrefix.length, this.#keyPrefix.length + LOOKUP_LENGTH);
    let row = this.#recentKeys.get(lookupId);
    if (!row) {
      row = await this.#repo.findApiKeyByLookup(lookupId);
      // Only keys that exist are kept: a key made a moment ago in another process works at once.
      if (row) this.#recentKeys.set(lookupId, row);
    }
    // Hash and compare even when no row matched, so timing does not reveal valid lookup ids.
    const expected = row?.secret_hash ?? sha256('corridor:no-such-key');
    const matches = timingSafeEqual(sha256(presented), Buffer.from(expected));
    if (!row || !matches || row.revoked_at) throw UNAUTHORIZED();
    const org = { features: row.organization_features.filter((f): f is Feature => (FEATURES as readonly string[]).includes(f)) };
    this.#touchApiKey(row.id);
    return {
      kind: 'api_key',
      organizationId: row.organization_id,
      userId: null,
      apiKeyId: row.id,
      roles: [],
      scopes: new Set(row.scopes as Scope[]),
      features: new Set(org.features),
      credentialId: `key:${row.id}`,
    };
  }

  async #authenticateBearer(token: string): Promise<Principal> {
    const found = this.#idp && !this.#tokens.claimsToBeOurs(token) ? await this.#externalTokenUser(this.#idp, token) : await this.#ownTokenUser(token);
    if (!found) throw UNAUTHORIZED();
    const org = await this.#organizations.get(found.organizationId);
    if (!org) throw UNAUTHORIZED();
    return {
      kind: 'user',
      organizationId: found.organizationId,
      userId: found.user.id,
      apiKeyId: null,
      roles: found.user.roles,
      scopes: scopesForRoles(found.user.roles),
      features: new Set(org.features),
      credentialId: `user:${found.user.id}`,
    };
  }

  async #ownTokenUser(token: string): Promise<{ user: User; organizationId: string } | null> {
    const claims = await this.#tokens.verify(token);
    if (!claims) return null;
    const found = await this.#users.findActive(claims.userId);
    return found && found.organizationId === claims.organizationId ? found : null;
  }

  // An unreachable key set throws (auth_failure); a valid token for no active user is a bad token.
  async #externalTokenUser(idp: ExternalIdentityProvider, token: string): Promise<{ user: User; organizationId: string } | null> {
    const email = await idp.verifiedEmail(token);
    if (!email) return null;
    const found = await this.#users.findForSignIn(email);
    if (!found || found.user.status !== 'ACTIVE') return null;
    return { user: found.user, organizationId: found.organizationId };
  }

  // last_used_at is informative, so it is written at most once a minute per key and never
  // delays or fails the request it describes.
  #touchApiKey(id: string): void {
    const now = Date.now();
    if ((this.#lastUsedWritten.get(id) ?? 0) > now - 60_000) return;
    this.#lastUsedWritten.set(id, now);
    this.#db.updateTable('api_keys').set({ last_used_at: new Date(now) }).where('id', '=', id).execute().catch(() => {});
  }

  async issueToken(email: string, password: string): Promise<{ accessToken: string; tokenType: 'Bearer'; expiresIn: number }> {
    const found = await this.#users.findForSignIn(email);
    if (!found) {
      await burnPasswordCheck(password);
      throw new ApiError(401, 'invalid_credentials', 'Email or password is incorrect');
    }
    const ok = await verifyPassword(password, found.passwordHash);
    if (!ok || found.user.status !== 'ACTIVE') throw new ApiError(401, 'invalid_credentials', 'Email or password is incorrect');
    const accessToken = await this.#tokens.issue({ userId: found.user.id, organizationId: found.organizationId });
    return { accessToken, tokenType: 'Bearer', expiresIn: ACCESS_TOKEN_TTL_SECONDS };
  }

  /** Creates an organization with its OWNER, in one transaction. */
  async signUp(input: { organizationName: string; email: string; password: string; fullName: string }): Promise<{ organizationId: string; user: User; accessToken: string }> {
    const passwordHash = await hashPassword(input.password);
    const { organizationId, user } = await this.#db.transaction().execute(async (trx) => {
      const org = await this.#organizations.create(input.organizationName, { trx });
      const created = await this.#users.create({ organizationId: org.id, email: input.email, fullName: input.fullName, passwordHash, roles: ['OWNER'] }, trx);
      return { organizationId: org.id, user: created };
    });
    const accessToken = await this.#tokens.issue({ userId: user.id, organizationId });
    return { organizationId, user, accessToken };
  }

  async createApiKey(principal: Principal, input: { name: string; scopes: Scope[] }, trx?: Kysely<any>): Promise<ApiKeyView & { secret: string }> {
    const beyond = input.scopes.filter((s) => !principal.scopes.has(s));
    if (beyond.length) throw new ApiError(403, 'insufficient_permissions', `You cannot grant scopes you do not hold: ${beyond.join(', ')}`);
    const random = randomBytes(KEY_RANDOM_BYTES).toString('base64url');
    const secret = `${this.#keyPrefix}${random}`;
    const row = await this.#repo.insertApiKey(
      {
        id: newId(),
        organization_id: principal.organizationId,
        name: input.name,
        scopes: [...new Set(input.scopes)],
        lookup_id: random.slice(0, LOOKUP_LENGTH),
        secret_hash: sha256(secret),
        prefix: `${this.#keyPrefix}${random.slice(0, 8)}`,
        last_four: secret.slice(-4),
        created_by_user_id: principal.userId,
      },
      trx,
    );
    return { ...toApiKeyView(row), secret };
  }

  async listApiKeys(organizationId: string, limit: number, cursor?: string): Promise<{ data: ApiKeyView[]; meta: { total: number; nextCursor: string | null } }> {
    const { rows, total } = await this.#repo.listApiKeys(organizationId, limit, decodeCursor(cursor));
    const { page, nextCursor } = pageOf(rows.map(toApiKeyView), limit);
    return { data: page, meta: { total, nextCursor } };
  }

  async revokeApiKey(organizationId: string, id: string): Promise<ApiKeyView> {
    const existing = await this.#repo.findApiKey(organizationId, id);
    if (!existing) throw new ApiError(404, 'not_found', 'API key not found');
    if (existing.revoked_at) return toApiKeyView(existing);
    const row = await this.#repo.revokeApiKey(organizationId, id);
    this.#recentKeys.delete(existing.lookup_id);
    return toApiKeyView(row!);
  }

  /** The operator account from CORRIDOR_OPS_EMAIL / CORRIDOR_OPS_PASSWORD, created when absent. */
  async ensureOperator(email: string, password: string): Promise<{ created: boolean }> {
    const existing = await this.#users.findForSignIn(email);
    if (existing) {
      if (!existing.user.roles.includes('SERVICE_OPS')) {
        throw new Error(`CORRIDOR_OPS_EMAIL ${email} already belongs to a customer user; choose another operator email`);
      }
      return { created: false };
    }
    const passwordHash = await hashPassword(password);
    // Looked up before the transaction: inside it only trx may be used (one PGlite session).
    const operatorOrg = await this.#organizations.operator();
    await this.#db.transaction().execute(async (trx) => {
      const org = operatorOrg ?? (await this.#organizations.create('Corridor operations', { kind: 'OPERATOR', trx }));
      await this.#users.create({ organizationId: org.id, email, fullName: 'Service operator', passwordHash, roles: ['SERVICE_OPS'] }, trx);
    });
    return { created: true };
  }

  /**
   * On an empty store, creates a ready organization with an owner and an all-scopes API key,
   * and returns the credentials so first start can print them once. Returns null otherwise.
   */
  async bootstrapFirstOrganization(): Promise<{ organizationId: string; email: string; password: string; apiKey: string } | null> {
    if ((await this.#organizations.customerCount()) > 0) return null;
    const production = this.#env === 'production';
    const email = production ? 'owner@corridor.local' : 'owner@sandbox.corridor.local';
    const password = randomBytes(12).toString('base64url');
    const passwordHash = await hashPassword(password);
    // Checked again under a lock: processes starting together on one database create one organization.
    return this.#repo.withStartupLock('firstOrganization', async (trx) => {
      if ((await this.#organizations.customerCount(trx)) > 0) return null;
      const org = await this.#organizations.create(production ? 'My organization' : 'Sandbox organization', { trx });
      const user = await this.#users.create({ organizationId: org.id, email, fullName: production ? 'Owner' : 'Sandbox Owner', passwordHash, roles: ['OWNER'] }, trx);
      const key = await this.createApiKey(
        { kind: 'user', organizationId: org.id, userId: user.id, apiKeyId: null, roles: ['OWNER'], scopes: new Set(SCOPES), features: new Set(), credentialId: '' },
        { name: 'Default key', scopes: [...SCOPES] },
        trx,
      );
      return { organizationId: org.id, email, password, apiKey: key.secret };
    });
  }
}
