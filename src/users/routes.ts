import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import { User, UserList, UserListQuery } from './schemas.ts';
import type { UserService } from './service.ts';

export async function userRoutes(app: App, deps: { users: UserService }) {
  app.get('/v1/users', {
    config: { auth: 'any', scope: 'users:read' },
    schema: {
      operationId: 'listUsers',
      tags: ['Users'],
      summary: 'List the users of your organization',
      querystring: UserListQuery,
      response: { 200: UserList, ...errorResponses({ 400: ['invalid_cursor'] }) },
    },
    handler: async (request) => {
      const { limit = 25, cursor } = request.query;
      return deps.users.list(principalOf(request).organizationId, limit, cursor);
    },
  });

  app.get('/v1/users/me', {
    config: { auth: 'bearer' },
    schema: { operationId: 'getCurrentUser', tags: ['Users'], summary: 'The signed-in user', response: { 200: User } },
    handler: async (request) => {
      const p = principalOf(request);
      return deps.users.get(p.organizationId, p.userId!);
    },
  });
}
