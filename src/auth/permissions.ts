// Scopes carried by API keys and derived from user roles (DECISIONS.md §2).
import type { Role } from '../users/service.ts';

export const SCOPES = [
  'transfers:read',
  'transfers:write',
  'destinations:read',
  'destinations:write',
  'entities:read',
  'entities:write',
  'quotes:write',
  'reports:read',
  'reports:write',
  'users:read',
  'webhooks:read',
  'webhooks:write',
  'keys:write',
] as const;
export type Scope = (typeof SCOPES)[number];

const READ_SCOPES = SCOPES.filter((s) => s.endsWith(':read'));

/** What each role may do. Roles are fixed; an organization assigns them to its users. */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  OWNER: SCOPES,
  ADMIN: SCOPES,
  DEVELOPER: SCOPES,
  VIEWER: READ_SCOPES,
  // Operator staff act through /v1/ops/*, which checks the role itself; they read their own org.
  SERVICE_OPS: READ_SCOPES,
};

export function scopesForRoles(roles: readonly Role[]): Set<Scope> {
  const out = new Set<Scope>();
  for (const role of roles) for (const s of ROLE_SCOPES[role] ?? []) out.add(s);
  return out;
}
