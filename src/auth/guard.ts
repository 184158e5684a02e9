// The one gate every route passes. A route declares in its config what it needs:
//   auth: 'none' | 'any' | 'bearer'   (default 'any': a route is protected unless it says otherwise)
//   scope: a permission the credential must hold
//   feature: an organization feature that must be on
//   ops: the caller must be a SERVICE_OPS user
import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/app.ts';
import { ApiError } from '../platform/http/errors.ts';
import { addErrorCodes } from '../platform/http/schemas.ts';
import type { Feature } from '../organizations/service.ts';
import type { Scope } from './permissions.ts';
import { USER_TOKEN_REQUIRED } from './service.ts';
import type { AuthService, Principal } from './service.ts';
import { RateLimiter } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: 'none' | 'any' | 'bearer';
    scope?: Scope;
    feature?: Feature;
    ops?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** The authenticated caller of a protected route. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route is not protected by the auth guard');
  return request.principal;
}

export function installAuthGuard(app: App, auth: AuthService, options: { rateLimitPerMinute: number }): void {
  const limiter = new RateLimiter(options.rateLimitPerMinute);
  app.decorateRequest('principal', null);

  // Security requirements and required scopes are derived from the same route config the guard
  // enforces, so the OpenAPI document cannot drift from the behaviour.
  app.addHook('onRoute', (route) => {
    const config = (route.config ?? {}) as { auth?: string; scope?: string; feature?: string; ops?: boolean };
    if (route.url.startsWith('/documentation')) return;
    const schema = (route.schema ??= {}) as Record<string, unknown>;
    if (config.auth === 'none') {
      // Said explicitly, so a reader (and a generated client) knows no credential is sent.
      schema.security = [];
      return;
    }
    schema.security = config.auth === 'bearer' ? [{ Bearer: [] }] : [{ ApiKey: [] }, { Bearer: [] }];
    const notes = [
      config.auth === 'bearer' ? 'Bearer token only (an API key gets 403 user_token_required).' : 'API key or bearer token.',
      config.scope ? `Requires scope \`${config.scope}\`.` : null,
      config.feature ? `Requires the organization feature \`${config.feature}\`.` : null,
      config.ops ? 'SERVICE_OPS users only.' : null,
    ].filter(Boolean);
    // onRoute also fires for the HEAD twin of a GET route, with the same schema object.
    const note = notes.join(' ');
    if (!(typeof schema.description === 'string' && schema.description.includes(note))) schema.description = [schema.description, note].filter(Boolean).join('\n\n');
    if (config.scope) schema['x-required-scope'] = config.scope;
    // What the guard itself can answer, documented on every protected route.
    addErrorCodes(schema, 401, ['missing_credentials', 'unauthorized']);
    if (config.auth === 'bearer') addErrorCodes(schema, 403, ['user_token_required']);
    if (config.scope || config.ops) addErrorCodes(schema, 403, ['insufficient_permissions']);
    if (config.feature) addErrorCodes(schema, 403, ['feature_not_enabled']);
    addErrorCodes(schema, 429, ['rate_limited']);
    addErrorCodes(schema, 500, ['auth_failure']);
  });

  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    // Unmatched routes (404/405) carry no auth config; they reveal nothing, so they answer as is.
    if (!request.routeOptions.url || config.auth === 'none') return;
    const apiKey = request.headers['x-api-key'];
    const principal = await auth.authenticate({
      authorization: request.headers.authorization,
      apiKey: Array.isArray(apiKey) ? apiKey[0] : apiKey,
    });
    if (config.auth === 'bearer' && principal.kind !== 'user') throw USER_TOKEN_REQUIRED();
    request.principal = principal;

    const verdict = limiter.take(principal.credentialId);
    if (verdict) {
      reply.header('RateLimit-Limit', String(verdict.limit));
      reply.header('RateLimit-Remaining', String(verdict.remaining));
      reply.header('RateLimit-Reset', String(verdict.resetSeconds));
      if (verdict.limited) {
        throw new ApiError(429, 'rate_limited', `Too many requests for this credential; retry after ${verdict.resetSeconds} s`, { headers: { 'Retry-After': String(verdict.resetSeconds) } });
      }
    }

    if (config.ops && !principal.roles.includes('SERVICE_OPS')) {
      throw new ApiError(403, 'insufficient_permissions', 'Only service operations staff may do this');
    }
    if (config.scope && !principal.scopes.has(config.scope)) {
      throw new ApiError(403, 'insufficient_permissions', `This request needs the ${config.scope} permission`);
    }
    if (config.feature && !principal.features.has(config.feature)) {
      throw new ApiError(403, 'feature_not_enabled', `The ${config.feature} feature is not enabled for this organization`);
    }
  });
}
