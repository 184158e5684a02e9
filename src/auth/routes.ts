import type { App } from '../platform/http/app.ts';
import { ApiError } from '../platform/http/errors.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from './guard.ts';
import { ApiKey, ApiKeyList, ApiKeyListQuery, CreateApiKeyBody, CreatedApiKey, IdParams, Jwks, SignUpBody, SignUpResponse, TokenBody, TokenResponse } from './schemas.ts';
import type { AuthService } from './service.ts';

export async function authRoutes(app: App, deps: { auth: AuthService; signup: 'open' | 'closed' }) {
  app.post('/v1/auth/signup', {
    config: { auth: 'none' },
    schema: {
      operationId: 'signUp',
      tags: ['Authentication'],
      summary: 'Create an organization and its owner',
      description: 'Open by default in sandbox, closed by default in production (CORRIDOR_SIGNUP).',
      body: SignUpBody,
      response: { 201: SignUpResponse, ...errorResponses({ 403: ['signup_closed'], 409: ['email_taken'] }) },
    },
    handler: async (request, reply) => {
      if (deps.signup !== 'open') throw new ApiError(403, 'signup_closed', 'Sign-up is closed on this deployment');
      return reply.code(201).send(await deps.auth.signUp(request.body));
    },
  });

  app.post('/v1/auth/token', {
    config: { auth: 'none' },
    schema: {
      operationId: 'createToken',
      tags: ['Authentication'],
      summary: 'Exchange email and password for a bearer token',
      body: TokenBody,
      response: { 200: TokenResponse, ...errorResponses({ 401: ['invalid_credentials'] }) },
    },
    handler: async (request) => deps.auth.issueToken(request.body.email, request.body.password),
  });

  app.get('/.well-known/jwks.json', {
    config: { auth: 'none' },
    schema: { operationId: 'getJwks', tags: ['Authentication'], summary: 'Public keys that verify bearer tokens', response: { 200: Jwks } },
    handler: async () => deps.auth.jwks(),
  });

  app.post('/v1/api-keys', {
    config: { auth: 'bearer', scope: 'keys:write' },
    schema: {
      operationId: 'createApiKey',
      tags: ['API keys'],
      summary: 'Create an API key (the secret is shown once)',
      body: CreateApiKeyBody,
      response: { 201: CreatedApiKey, ...errorResponses({ 403: ['insufficient_permissions'] }) },
    },
    handler: async (request, reply) => {
      const key = await deps.auth.createApiKey(principalOf(request), request.body);
      return reply.code(201).send(key);
    },
  });

  app.get('/v1/api-keys', {
    config: { auth: 'any', scope: 'keys:write' },
    schema: {
      operationId: 'listApiKeys',
      tags: ['API keys'],
      summary: 'List API keys without their secrets',
      description: 'Oldest first, revoked keys included.',
      querystring: ApiKeyListQuery,
      response: { 200: ApiKeyList, ...errorResponses({ 400: ['invalid_cursor'] }) },
    },
    handler: async (request) => {
      const { limit = 25, cursor } = request.query;
      return deps.auth.listApiKeys(principalOf(request).organizationId, limit, cursor);
    },
  });

  app.delete('/v1/api-keys/:id', {
    config: { auth: 'any', scope: 'keys:write' },
    schema: {
      operationId: 'revokeApiKey',
      tags: ['API keys'],
      summary: 'Revoke an API key',
      description:
        'The key is refused from the next request on by the Corridor process that revoked it, and within one second by every other process ' +
        'serving the same database: each process remembers a key it has checked for that long, so that a client sending it with every request ' +
        'does not cost a database read each time.',
      params: IdParams, response: { 200: ApiKey, ...errorResponses({ 404: ['not_found'] }) } },
    handler: async (request) => deps.auth.revokeApiKey(principalOf(request).organizationId, request.params.id),
  });
}
